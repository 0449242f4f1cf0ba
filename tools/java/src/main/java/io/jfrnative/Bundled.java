package io.jfrnative;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The native files this jar carries for each platform it was built for, at {@code
 * io/jfrnative/native/linux-<arch>/}: the agent ({@value #LIBRARY}) and the symbolizer
 * ({@value #SYMBOLIZER}). For {@link JfrNative} and the JMH profiler; other code rarely needs it.
 *
 * <p>A file is unpacked into a directory created for it alone ({@code
 * Files.createTempDirectory("jfrnative-")}, mode 0700: never a predictable or shared path, so
 * no other user can put a file of theirs in its place), created new and made read-only
 * (0500).
 */
public final class Bundled {
    /** The agent's file name. */
    public static final String LIBRARY = "libjfrnative.so";
    /** The symbolizer's file name. */
    public static final String SYMBOLIZER = "jfr-symbolize";

    private static final String ROOT = "io/jfrnative/native/";
    private static final List<Path> DELETE_AT_EXIT = new ArrayList<>();
    private static boolean hookAdded;

    private Bundled() {}

    /**
     * This JVM's platform as the jar names it.
     *
     * @return {@code linux-x86_64} or {@code linux-aarch64}
     * @throws UnsupportedOperationException on another OS or architecture (the agent is
     *     Linux-only)
     */
    public static String platform() {
        String os = System.getProperty("os.name", "");
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (!os.equals("Linux")) {
            throw new UnsupportedOperationException(
                    "jfr-native runs on Linux only, this JVM runs on " + os + " (" + arch + ")");
        }
        switch (arch) {
            case "amd64":
            case "x86_64":
                return "linux-x86_64";
            case "aarch64":
            case "arm64":
                return "linux-aarch64";
            default:
                throw new UnsupportedOperationException(
                        "jfr-native has no build for Linux on " + arch + " (os.arch): only x86_64 and aarch64");
        }
    }

    /**
     * @param name {@value #LIBRARY} or {@value #SYMBOLIZER}
     * @return whether this jar holds the file for this platform
     */
    public static boolean has(String name) {
        return JfrNative.class.getClassLoader().getResource(resource(name)) != null;
    }

    /**
     * Unpacks a file into a new private directory.
     *
     * @param name {@value #LIBRARY} or {@value #SYMBOLIZER}
     * @param deleteAtExit whether a shutdown hook deletes the file and its directory (otherwise
     *     the caller does, with {@link #delete(Path)})
     * @return the unpacked file
     * @throws UnsupportedOperationException on an unsupported platform
     * @throws IllegalStateException if the jar lacks the file (built for other platforms only)
     * @throws UncheckedIOException on an I/O error
     */
    public static Path unpack(String name, boolean deleteAtExit) {
        String resource = resource(name);
        try (InputStream in = JfrNative.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("this jar has no " + resource + " (built for "
                        + builtPlatforms() + "); set -Djfrnative.library=/path/" + LIBRARY
                        + " to use a build of your own");
            }
            Path dir = Files.createTempDirectory(
                    "jfrnative-", PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            Path file = dir.resolve(name);
            try {
                Set<PosixFilePermission> rw = PosixFilePermissions.fromString("rw-------");
                try (OutputStream out = Channels.newOutputStream(Files.newByteChannel(file,
                        EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
                        PosixFilePermissions.asFileAttribute(rw)))) {
                    in.transferTo(out);
                }
                Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r-x------"));
            } catch (IOException | RuntimeException e) {
                delete(file); // a partial copy and its directory are not left behind
                throw e;
            }
            if (deleteAtExit) {
                deleteAtExit(file);
            }
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot unpack " + resource + ": " + e.getMessage(), e);
        }
    }

    /**
     * Deletes an unpacked file and its directory, quietly.
     *
     * @param file what {@link #unpack} returned
     */
    public static void delete(Path file) {
        try {
            Files.deleteIfExists(file);
            Files.deleteIfExists(file.getParent());
        } catch (IOException e) {
            // A leftover in the temporary directory is not worth an error.
        }
    }

    private static synchronized void deleteAtExit(Path file) {
        DELETE_AT_EXIT.add(file);
        if (!hookAdded) {
            hookAdded = true;
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                synchronized (Bundled.class) {
                    DELETE_AT_EXIT.forEach(Bundled::delete);
                }
            }, "jfrnative-cleanup"));
        }
    }

    private static String resource(String name) {
        return ROOT + platform() + "/" + name;
    }

    private static String builtPlatforms() {
        List<String> found = new ArrayList<>();
        for (String p : new String[] {"linux-x86_64", "linux-aarch64"}) {
            if (JfrNative.class.getClassLoader().getResource(ROOT + p + "/" + LIBRARY) != null) {
                found.add(p);
            }
        }
        return found.isEmpty() ? "no platform" : String.join(", ", found);
    }
}
