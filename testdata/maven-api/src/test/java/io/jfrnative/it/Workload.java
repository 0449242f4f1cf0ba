package io.jfrnative.it;

/** The JNI workload (src/test/c/workload.c): its hot functions are native. */
public final class Workload {
    static {
        // Set by surefire for the tests, by JmhProfilerTest for JMH's forks (-jvmArgsAppend),
        // by AgentPresentMain's launcher for that JVM.
        System.load(System.getProperty("workload.library"));
    }

    private Workload() {}

    /** Calls jfrnative_api_spin. */
    static native long spin(long rounds);

    /** Calls jfrnative_jmh_hash. */
    static native long hash(long seed, int rounds);

    /** Spins in jfrnative_api_spin for about {@code millis} of wall time. */
    static long spinFor(long millis) {
        long end = System.nanoTime() + millis * 1_000_000L;
        long x = 0;
        while (System.nanoTime() < end) {
            x += spin(2_000_000);
        }
        return x;
    }
}
