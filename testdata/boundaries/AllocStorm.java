import java.util.HashMap;
import java.util.Map;

/**
 * Allocation-heavy threads ("alloc-0", "alloc-1", ...) that store fresh objects into long-lived
 * arrays, a map and object fields, 13 frames below {@code Thread.run}, for SECONDS of wall time.
 * Every store of a fresh reference into an old object takes the collector's barriers (G1's
 * pre- and post-barrier queues, generational ZGC's load and store barrier stubs) and every
 * allocation may take the slow path into the VM: the code of compiled methods calls libjvm from
 * out-of-line stubs without a frame anchor, where a Java walk must cross the stub to find the
 * method's frame.
 *
 * <p>Usage: {@code java -Xmx256m [-XX:+UseZGC] -agentpath:...=file=a.jfr,interval=2ms
 * AllocStorm SECONDS [THREADS]}.
 */
public class AllocStorm {
    /** An object with reference and primitive fields. */
    static final class Node {
        Object payload;
        Node next;
        long n;

        Node(long n) {
            this.n = n;
        }
    }

    static final int SLOTS = 1 << 16;

    final Object[] kept = new Object[SLOTS];
    final Node[] nodes = new Node[4096];
    final Map<Integer, Object> map = new HashMap<>();
    long sum;

    /** One round of stores of fresh objects: into an array, a map and fields of old objects. */
    void store(int i) {
        Node n = new Node(i);
        n.payload = new int[8 + (i & 31)];
        Node old = nodes[i & 4095];
        if (old != null) {
            old.next = n;
            n.n += old.n & 7;
        }
        nodes[i & 4095] = n;
        kept[i & (SLOTS - 1)] = new byte[24 + (i & 15)];
        map.put(i & 8191, n.payload);
        sum += n.n;
    }

    void rounds(long endNs) {
        int i = 0;
        while (System.nanoTime() < endNs) {
            for (int k = 0; k < 4096; k++) {
                store(i++);
            }
        }
    }

    // Frames 3 to 13 below Thread.run: eleven distinct methods, so that the stack keeps its
    // depth whatever C2 inlines.
    void d11(long e) { rounds(e); }
    void d10(long e) { d11(e); }
    void d9(long e) { d10(e); }
    void d8(long e) { d9(e); }
    void d7(long e) { d8(e); }
    void d6(long e) { d7(e); }
    void d5(long e) { d6(e); }
    void d4(long e) { d5(e); }
    void d3(long e) { d4(e); }
    void d2(long e) { d3(e); }
    void d1(long e) { d2(e); }

    public static void main(String[] args) throws InterruptedException {
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        int count = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        Thread[] threads = new Thread[count];
        long[] sums = new long[count];
        for (int t = 0; t < count; t++) {
            int index = t;
            threads[t] = new Thread(() -> {
                AllocStorm storm = new AllocStorm();
                storm.d1(end);
                sums[index] = storm.sum;
            }, "alloc-" + t);
            threads[t].start();
        }
        long total = 0;
        for (int t = 0; t < count; t++) {
            threads[t].join();
            total += sums[t];
        }
        System.out.println("sum " + total);
    }
}
