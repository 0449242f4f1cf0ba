package io.jfrnative;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The jfr-native agent, driven from inside the JVM: start, dump and stop a recording of CPU
 * samples with native and Java frames ({@code jdk.CPUTimeSample} events in a JFR file).
 *
 * <pre>{@code
 * try (JfrNative.Recording r = JfrNative.record(Paths.get("out.jfr"), Duration.ofMillis(10))) {
 *     work();
 *     r.dump(Paths.get("so-far.jfr"));   // a readable copy; the recording goes on
 * }                                      // stopped: out.jfr is finished
 * }</pre>
 *
 * <p>then {@code jfr-symbolize out.jfr -o out.html} names the native frames (offline, on this
 * machine or another). Or, without try-with-resources:
 *
 * <pre>{@code
 * JfrNative agent = JfrNative.get();
 * agent.start("file=out.jfr,interval=1ms,threads=all");   // the agent's options (docs/agent.md)
 * ...
 * agent.stop();
 * }</pre>
 *
 * <p><b>Where the agent comes from.</b> {@link #get()} uses the agent already in this JVM if there
 * is one ({@code -agentpath:} or a runtime attach: HotSpot finds a native method in agent
 * libraries too), so a JVM never holds two agents. Otherwise it loads the file that the system
 * property {@code jfrnative.library} names, else the library in this jar for the platform
 * ({@code io/jfrnative/native/linux-<arch>/libjfrnative.so}), unpacked into a new private
 * directory (see {@link #libraryPath()}).
 *
 * <p>One recording runs at a time in a JVM, whoever started it (this API, {@code -agentpath:}
 * options or {@code jfrnative attach}): this API sees and can stop that one too. Methods are
 * thread-safe: the agent serializes them.
 */
public final class JfrNative {
    private static final Object LOCK = new Object();
    private static volatile JfrNative instance;

    private final String libraryPath;

    private JfrNative(String libraryPath) {
        this.libraryPath = libraryPath;
    }

    /**
     * The agent of this JVM, loaded on the first call (see the class comment for from where).
     *
     * @return the one instance
     * @throws UnsupportedOperationException on a platform this jar has no library for (the
     *     message names the OS and architecture)
     * @throws IllegalStateException if the library cannot be unpacked or loaded
     */
    public static JfrNative get() {
        JfrNative agent = instance;
        if (agent == null) {
            synchronized (LOCK) {
                agent = instance;
                if (agent == null) {
                    agent = new JfrNative(NativeLibrary.load());
                    instance = agent;
                }
            }
        }
        return agent;
    }

    /**
     * Starts a recording with the agent's options, as {@code -agentpath:libjfrnative.so=OPTIONS}
     * takes them: {@code file=out.jfr,interval=10ms,threads=all,...} (docs/agent.md; {@code
     * file} is required).
     *
     * @param options comma-separated {@code key=value} items
     * @throws IllegalStateException with the agent's message: a recording already runs (it
     *     names its file), an option is bad ({@code bad agent option 'interval': ...}), the file
     *     cannot be created
     */
    public void start(String options) {
        Objects.requireNonNull(options, "options");
        if (options.trim().equals("stop")) {
            throw new IllegalArgumentException("'stop' is not a recording's options: call stop()");
        }
        execute0(options);
    }

    /**
     * Starts a recording into {@code file}, one sample per {@code interval} of a thread's CPU
     * time, of the Java threads, with the agent's other defaults.
     *
     * @param file the JFR file to write (created; its directory must exist; a relative path is
     *     made absolute here)
     * @param interval 100 µs to 10 s
     * @throws IllegalArgumentException if the path holds a comma (the options' separator)
     * @throws IllegalStateException as {@link #start(String)}
     */
    public void start(Path file, Duration interval) {
        start(options(file, interval));
    }

    /**
     * Stops the running recording and finishes its file.
     *
     * @throws IllegalStateException if no recording runs
     */
    public void stop() {
        execute0("stop");
    }

    /**
     * Runs one agent command: a recording's options (as {@link #start(String)}) or {@code stop}.
     * For what this API has no method for yet.
     *
     * @param command the options, or {@code stop}
     * @throws IllegalStateException with the agent's message
     */
    public void execute(String command) {
        execute0(Objects.requireNonNull(command, "command"));
    }

    /**
     * Writes the recording so far into a new file: the running chunk is finished first, so the
     * copy holds every sample up to now and is a complete JFR file ({@code jfr summary} reads
     * it). The recording goes on.
     *
     * @param path the file to create; it must not exist
     * @throws IllegalStateException if no recording runs, or on an I/O error (the agent's
     *     message)
     */
    public void dump(Path path) {
        dump0(Objects.requireNonNull(path, "path").toAbsolutePath().toString());
    }

    /** @return whether a recording runs in this JVM */
    public boolean isRunning() {
        return isRunning0();
    }

    /** @return the running recording's output file (as the agent was given it), if one runs */
    public Optional<Path> file() {
        String file = file0();
        return file == null ? Optional.empty() : Optional.of(Paths.get(file));
    }

    /** @return the agent's version, e.g. {@code jfr-native 0.1.0 (abc1234)} */
    public String version() {
        return version0();
    }

    /**
     * Where this API found the agent: {@code "agent already loaded"} (by {@code -agentpath:} or an
     * attach), the {@code jfrnative.library} file, or the file unpacked from the jar. An unpacked
     * file is deleted right after loading, as a JNI jar's loader does: the loaded code stays
     * mapped, nothing is left in the temporary directory if the JVM is killed, and the agent keeps
     * a copy beside each recording for symbolizing (docs/agent.md, "Libraries unpacked from
     * jars").
     *
     * @return a description of the library's origin
     */
    public String libraryPath() {
        return libraryPath;
    }

    /**
     * Starts a recording into {@code file} and returns a handle whose {@link Recording#close()}
     * stops it: for try-with-resources.
     *
     * @param file the JFR file to write
     * @param interval 100 µs to 10 s
     * @return the running recording
     * @throws IllegalStateException as {@link #start(String)}
     */
    public static Recording record(Path file, Duration interval) {
        JfrNative agent = get();
        agent.start(file, interval);
        // The file as the agent took it (it expands %p and %t): close() stops this recording
        // only, not one another caller started meanwhile.
        Path started = agent.file().orElse(file.toAbsolutePath());
        return new Recording(agent, started);
    }

    /**
     * A recording started by {@link JfrNative#record}; {@link #close()} stops it.
     */
    public static final class Recording implements AutoCloseable {
        private final JfrNative agent;
        private final Path file;
        private boolean closed;

        private Recording(JfrNative agent, Path file) {
            this.agent = agent;
            this.file = file;
        }

        /** @return the file the recording is written to */
        public Path file() {
            return file;
        }

        /**
         * Writes the recording so far into a new file, as {@link JfrNative#dump(Path)}.
         *
         * @param path the file to create; it must not exist
         */
        public void dump(Path path) {
            agent.dump(path);
        }

        /**
         * Stops the recording and finishes its file. Does nothing the second time, nor if the
         * recording was stopped otherwise ({@link JfrNative#stop()}, {@code jfrnative attach}).
         */
        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closed = true;
            Optional<Path> running = agent.file();
            if (running.isPresent() && running.get().equals(file)) {
                agent.stop();
            }
        }
    }

    /** The agent's options for {@link #start(Path, Duration)}. */
    static String options(Path file, Duration interval) {
        Objects.requireNonNull(file, "file");
        Objects.requireNonNull(interval, "interval");
        String path = file.toAbsolutePath().toString();
        if (path.indexOf(',') >= 0) {
            throw new IllegalArgumentException(
                    "the agent's options are comma-separated: a file path with a comma cannot be given: " + path);
        }
        return "file=" + path + ",interval=" + interval(interval);
    }

    /** A duration in the agent's syntax: the largest of s, ms, us, ns that divides it. */
    static String interval(Duration interval) {
        if (interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("interval must be positive: " + interval);
        }
        long nanos;
        try {
            nanos = interval.toNanos();
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("interval too long: " + interval, e);
        }
        if (nanos % 1_000_000_000L == 0) {
            return nanos / 1_000_000_000L + "s";
        } else if (nanos % 1_000_000L == 0) {
            return nanos / 1_000_000L + "ms";
        } else if (nanos % 1_000L == 0) {
            return nanos / 1_000L + "us";
        }
        return nanos + "ns";
    }

    // Implemented in the agent (recorder/src/java_api.rs). Static, so that the probe in
    // NativeLibrary can call version0 before any instance exists.
    static native String version0();

    private static native void execute0(String command);

    private static native boolean isRunning0();

    private static native void dump0(String path);

    private static native String file0();
}
