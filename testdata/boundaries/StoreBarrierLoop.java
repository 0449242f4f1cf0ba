import java.util.ArrayList;
import java.util.List;

/**
 * Two threads ("store-0", "store-1") that compute a little and store new arrays into a list,
 * for SECONDS of wall time: under generational ZGC most stores of a fresh reference take the
 * store barrier's slow path (libjvm's {@code ZBarrier::heap_store_slow_path}), called from a
 * barrier stub in the C2 nmethod's stub section, which the agent's walk does not cross
 * (docs/how-it-works.md#limits).
 *
 * <p>Usage: {@code java -XX:+UseZGC -Xmx128m -agentpath:...=file=s.jfr,interval=2ms
 * StoreBarrierLoop SECONDS}.
 */
public class StoreBarrierLoop {
    static int f0(int x) {
        return x * 3 + 1;
    }

    static int f1(int x) {
        return f0(x) ^ 7;
    }

    static int f2(int x) {
        return f1(x) + f0(x);
    }

    public static void main(String[] args) throws InterruptedException {
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        Runnable loop = () -> {
            long sum = 0;
            List<int[]> kept = new ArrayList<>();
            while (System.nanoTime() < end) {
                for (int i = 0; i < 1000; i++) {
                    sum += f2(i);
                    kept.add(new int[64]);
                }
                if (kept.size() > 20000) {
                    kept.clear();
                }
            }
            System.out.println("sum " + sum);
        };
        Thread[] threads = new Thread[2];
        for (int t = 0; t < threads.length; t++) {
            threads[t] = new Thread(loop, "store-" + t);
            threads[t].start();
        }
        for (Thread t : threads) {
            t.join();
        }
    }
}
