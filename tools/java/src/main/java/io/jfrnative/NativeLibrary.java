package io.jfrnative;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/** Finds or loads the agent for {@link JfrNative#get()}. */
final class NativeLibrary {
    /** The system property naming a library file to load instead of the jar's. */
    static final String PROPERTY = "jfrnative.library";

    private NativeLibrary() {}

    /** @return where the agent came from (see {@link JfrNative#libraryPath()}) */
    static String load() {
        // The agent already in this JVM (-agentpath: or an attach): HotSpot looks a native
        // method up in agent libraries after the class loader's, so the call links. Loading a
        // second copy would make two agents, each with its own signal handler and recording.
        if (probe()) {
            return "agent already loaded";
        }
        String override = System.getProperty(PROPERTY);
        if (override != null && !override.isEmpty()) {
            Path file = Paths.get(override).toAbsolutePath();
            if (!Files.isRegularFile(file)) {
                throw new IllegalStateException("-D" + PROPERTY + "=" + override + ": no such file");
            }
            systemLoad(file);
            return file.toString();
        }
        Path file = Bundled.unpack(Bundled.LIBRARY, false);
        try {
            systemLoad(file);
        } finally {
            // Deleted at once, as Netty's loader does: the mapping stays, nothing is left behind
            // if the JVM is killed (a shutdown hook would not run), and the agent keeps its own
            // copy beside a recording when it needs one (keep_libs).
            Bundled.delete(file);
        }
        return file.toString();
    }

    private static void systemLoad(Path file) {
        try {
            System.load(file.toString());
        } catch (UnsatisfiedLinkError e) {
            throw new IllegalStateException("cannot load the jfr-native agent " + file + ": " + e.getMessage(), e);
        }
        if (!probe()) {
            throw new IllegalStateException(file + " was loaded but does not implement "
                    + JfrNative.class.getName() + "'s native methods (not a jfr-native agent of 0.1.0 or later?)");
        }
    }

    private static boolean probe() {
        try {
            JfrNative.version0();
            return true;
        } catch (UnsatisfiedLinkError e) {
            return false;
        }
    }
}
