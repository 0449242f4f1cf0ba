import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Test workload for samples taken while another CPU profiler runs in the same JVM: the
 * library "otherprofiler" installs a handler for SIGNAL and, on each busy thread, a per-thread
 * CPU timer every INTERVAL_NS. THREADS threads named busy-N then compute in pure Java until each
 * has used SECONDS of its own CPU time.
 *
 * <p>Prints "CPU <name> <cpu-ns>" per thread and "OTHER_SIGNALS <n>" (signals the other
 * profiler's handler took).
 *
 * <p>Usage: java -Djava.library.path=DIR Coincident SECONDS SIGNAL INTERVAL_NS THREADS
 */
public class Coincident {
    static native int install(int signal);

    static native int startTimer(long intervalNs);

    static native long handled();

    static volatile long sink;

    /** Pure Java work: no calls out of the loop, no allocation. */
    static long spin(long x) {
        for (int i = 0; i < 1_000_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 29;
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        long ns = (long) (Double.parseDouble(args[0]) * 1e9);
        int signal = Integer.parseInt(args[1]);
        long intervalNs = Long.parseLong(args[2]);
        int n = Integer.parseInt(args[3]);
        System.loadLibrary("otherprofiler");
        int rc = install(signal);
        if (rc != 0) {
            throw new IllegalStateException("installing the handler for signal " + signal + ": " + rc);
        }
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        Thread[] threads = new Thread[n];
        long[] cpu = new long[n];
        for (int i = 0; i < n; i++) {
            final int k = i;
            threads[i] = new Thread(() -> {
                int timer = startTimer(intervalNs);
                if (timer != 0) {
                    throw new IllegalStateException("timer_create: " + timer);
                }
                long x = k + 1;
                while (mx.getCurrentThreadCpuTime() < ns) {
                    x = spin(x);
                }
                sink += x;
                cpu[k] = mx.getCurrentThreadCpuTime();
            }, "busy-" + i);
        }
        for (Thread t : threads) t.start();
        for (Thread t : threads) t.join();
        for (int i = 0; i < n; i++) {
            System.out.println("CPU " + threads[i].getName() + " " + cpu[i]);
        }
        System.out.println("OTHER_SIGNALS " + handled());
    }
}
