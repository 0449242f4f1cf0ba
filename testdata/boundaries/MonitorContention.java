/**
 * Three threads ("monitor-0".."monitor-2") contending for one lock for SECONDS of wall time:
 * the lock is inflated, and releasing it often takes the slow path of {@code monitorexit}
 * (libjvm's {@code SharedRuntime::monitor_exit_helper}). Run with
 * {@code -XX:TieredStopAtLevel=1} to keep the code in C1, whose slow path the agent cannot walk
 * (docs/how-it-works.md#limits), or with the default tiers for C2's, which it walks.
 *
 * <p>Usage: {@code java -agentpath:...=file=m.jfr,interval=2ms MonitorContention SECONDS}; the
 * agent's summary line "Java stack failed N" counts the samples without a Java stack.
 */
public class MonitorContention {
    private static final Object LOCK = new Object();
    private static long shared;

    static long work(long x) {
        synchronized (LOCK) {
            for (int i = 0; i < 50; i++) {
                x = x * 31 + i;
            }
            shared += x;
        }
        return x;
    }

    public static void main(String[] args) throws InterruptedException {
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        Thread[] threads = new Thread[3];
        for (int t = 0; t < threads.length; t++) {
            threads[t] = new Thread(() -> {
                long x = 1;
                while (System.nanoTime() < end) {
                    x = work(x);
                }
                System.out.println("result " + x);
            }, "monitor-" + t);
            threads[t].start();
        }
        for (Thread t : threads) {
            t.join();
        }
    }
}
