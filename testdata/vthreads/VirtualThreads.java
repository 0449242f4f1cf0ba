import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * Virtual threads that burn CPU (JDK 21+): `java VirtualThreads THREADS SECONDS`. Each virtual
 * thread spins in {@link #spin} for SECONDS of wall time, yielding now and then so that it
 * unmounts and may come back on another carrier, and prints `VTHREAD <threadId>` once running.
 * The main thread waits without CPU.
 */
public class VirtualThreads {
    static volatile long sink;

    static long spin(long seed, long untilNs) {
        long x = seed;
        int rounds = 0;
        while (System.nanoTime() < untilNs) {
            for (int i = 0; i < 200_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
                x ^= x >>> 29;
            }
            if (++rounds % 8 == 0) {
                Thread.yield();
            }
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        long seconds = Long.parseLong(args[1]);
        CountDownLatch started = new CountDownLatch(threads);
        long until = System.nanoTime() + seconds * 1_000_000_000L;
        List<Thread> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long seed = t + 1;
            all.add(Thread.ofVirtual().start(() -> {
                synchronized (VirtualThreads.class) {
                    System.out.println("VTHREAD " + Thread.currentThread().threadId());
                }
                started.countDown();
                sink += spin(seed, until);
            }));
        }
        started.await();
        for (Thread t : all) {
            t.join();
        }
        System.out.println("done " + sink);
    }
}
