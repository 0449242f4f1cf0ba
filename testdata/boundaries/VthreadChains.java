import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Virtual threads (JDK 21+) that unmount deep in a call chain and compute right after each
 * remount: `java VthreadChains SECONDS DEPTH[,DEPTH...] THREADS_PER_DEPTH`. Each virtual thread
 * calls {@link #level} DEPTH times deep, then, until SECONDS of wall time have passed, parks
 * (LockSupport.parkNanos, Thread.sleep and a poll of an empty blocking queue, in turn) and
 * computes for about a millisecond ({@link #compute}; with a fourth argument {@code deflate}, in
 * native code instead: {@link #deflate}, zlib's through {@code Deflater}). A remount thaws the virtual thread's
 * frames lazily: the computation runs with the rest of the chain still frozen in the heap
 * (its stack chunk), below a return barrier. Each virtual thread prints
 * `VTHREAD <threadId> <depth>` once running; the main thread waits without CPU and prints
 * `done` at the end. The chain's methods are compiled first (a warm-up on the main thread).
 */
public class VthreadChains {
    static volatile long sink;
    /** Always empty: a timed poll of it parks the virtual thread. */
    static final LinkedBlockingQueue<Object> EMPTY = new LinkedBlockingQueue<>();
    /** Iterations of compute's inner loop: about 1 ms of CPU here. */
    static final int WORK = 400_000;
    /** Whether the work after each remount is zlib's (native code), not {@link #compute}. */
    static boolean nativeWork;
    /** What {@link #deflate} compresses: 64 KB of text-like bytes. */
    static final byte[] TEXT = new byte[64 << 10];

    static {
        long x = 7;
        for (int i = 0; i < TEXT.length; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            TEXT[i] = (byte) ('a' + (int) ((x >>> 33) % 16));
        }
    }

    /** One link of the chain: `depth` frames of it above {@link #work}. */
    static long level(int depth, long seed, long untilNs) throws InterruptedException {
        if (depth > 1) {
            return level(depth - 1, seed, untilNs) + 1;
        }
        return work(seed, untilNs);
    }

    /** Parks and computes in turn, at the bottom of the chain, until `untilNs`. */
    static long work(long seed, long untilNs) throws InterruptedException {
        long x = seed;
        int round = 0;
        while (System.nanoTime() < untilNs) {
            switch (round++ % 3) {
                case 0 -> LockSupport.parkNanos(100_000);
                case 1 -> Thread.sleep(0, 100_000);
                default -> EMPTY.poll(100, TimeUnit.MICROSECONDS);
            }
            x = nativeWork ? deflate(x) : compute(x);
        }
        return x;
    }

    /**
     * CPU work in native code right after a remount: zlib compresses {@link #TEXT} (a few
     * milliseconds), the carrier in native code meanwhile.
     */
    static long deflate(long seed) {
        java.util.zip.Deflater d = new java.util.zip.Deflater(6);
        d.setInput(TEXT);
        d.finish();
        byte[] out = new byte[TEXT.length + 1024];
        long n = 0;
        while (!d.finished()) {
            n += d.deflate(out);
        }
        d.end();
        return seed ^ n;
    }

    /**
     * CPU work right after a remount. The loop (a long counter with a data-dependent bound)
     * keeps a safepoint poll inside it, so a sample here names this method.
     */
    static long compute(long seed) {
        long x = seed;
        for (long i = 0; i < WORK + (seed & 7); i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 29;
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        long seconds = (long) (Double.parseDouble(args[0]) * 1e9);
        String[] depths = args[1].split(",");
        int perDepth = Integer.parseInt(args[2]);
        nativeWork = args.length > 3 && args[3].equals("deflate");
        // Warm-up: the chain's methods are JIT-compiled before the virtual threads start, as a
        // server's code is (their frames then are compiled frames, on the stack and frozen).
        for (int i = 0; i < 20_000; i++) {
            for (String d : depths) {
                sink += level(Integer.parseInt(d), i, 0);
            }
        }
        long until = System.nanoTime() + seconds;
        CountDownLatch started = new CountDownLatch(depths.length * perDepth);
        List<Thread> all = new ArrayList<>();
        for (String d : depths) {
            int depth = Integer.parseInt(d);
            for (int t = 0; t < perDepth; t++) {
                long seed = all.size() + 1;
                all.add(Thread.ofVirtual().start(() -> {
                    synchronized (VthreadChains.class) {
                        System.out.println("VTHREAD " + Thread.currentThread().threadId() + " " + depth);
                    }
                    started.countDown();
                    try {
                        sink += level(depth, seed, until);
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                }));
            }
        }
        started.await();
        for (Thread t : all) {
            t.join();
        }
        System.out.println("done " + sink);
    }
}
