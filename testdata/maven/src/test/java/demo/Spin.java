package demo;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/** The tests' busy loop: about one second of the thread's CPU time, however busy the machine. */
final class Spin {
    static volatile long sink;

    private Spin() {}

    static void oneSecond() {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long x = 1;
        long end = threads.getCurrentThreadCpuTime() + 1_000_000_000L;
        while (threads.getCurrentThreadCpuTime() < end) {
            for (int i = 0; i < 100_000; i++) {
                x = x * 6364136223846793005L + 1;
            }
        }
        sink = x;
    }
}
