import java.util.concurrent.atomic.AtomicLong;

/**
 * Java code whose CPU goes into code the JVM generates: the stubs a native-aware profiler must
 * show as native frames, named.
 *
 * <ul>
 *   <li>thread {@code delete}: {@code StringBuilder.delete(0, 1)} on a 1 MB builder, which moves
 *       the whole array down by one byte in the arraycopy stub ({@code System.arraycopy});
 *   <li>thread {@code vcalls}: a megamorphic virtual call (eight receiver classes) through the
 *       {@code vtable stub};
 *   <li>thread {@code icalls}: a megamorphic interface call through the {@code itable stub}.
 * </ul>
 *
 * Usage: {@code VmStubs SECONDS [delete,vcalls,icalls]}. Prints {@code done} and a checksum.
 */
public class VmStubs {
    static final AtomicLong SINK = new AtomicLong();

    abstract static class Shape {
        abstract int area();
    }

    interface Sized {
        int size();
    }

    static final class S0 extends Shape implements Sized { public int area() { return 1; } public int size() { return 9; } }
    static final class S1 extends Shape implements Sized { public int area() { return 2; } public int size() { return 8; } }
    static final class S2 extends Shape implements Sized { public int area() { return 3; } public int size() { return 7; } }
    static final class S3 extends Shape implements Sized { public int area() { return 4; } public int size() { return 6; } }
    static final class S4 extends Shape implements Sized { public int area() { return 5; } public int size() { return 5; } }
    static final class S5 extends Shape implements Sized { public int area() { return 6; } public int size() { return 4; } }
    static final class S6 extends Shape implements Sized { public int area() { return 7; } public int size() { return 3; } }
    static final class S7 extends Shape implements Sized { public int area() { return 8; } public int size() { return 2; } }

    static Object[] receivers() {
        Object[] all = new Object[] {new S0(), new S1(), new S2(), new S3(), new S4(), new S5(), new S6(), new S7()};
        Object[] mixed = new Object[4096];
        long seed = 42;
        for (int i = 0; i < mixed.length; i++) {
            seed = seed * 6364136223846793005L + 1442695040888963407L;
            mixed[i] = all[(int) ((seed >>> 33) & 7)];
        }
        return mixed;
    }

    static void delete(long endNs) {
        StringBuilder sb = new StringBuilder(1 << 20);
        for (int i = 0; i < (1 << 20); i++) {
            sb.append((char) ('a' + i % 26));
        }
        long sum = 0;
        while (System.nanoTime() < endNs) {
            for (int i = 0; i < 64; i++) {
                sb.delete(0, 1);
                sb.append('x');
            }
            sum += sb.charAt(7);
        }
        SINK.addAndGet(sum);
    }

    static int virtualCalls(Object[] mixed) {
        int sum = 0;
        for (Object o : mixed) {
            sum += ((Shape) o).area();
        }
        return sum;
    }

    static int interfaceCalls(Object[] mixed) {
        int sum = 0;
        for (Object o : mixed) {
            sum += ((Sized) o).size();
        }
        return sum;
    }

    static void vcalls(long endNs) {
        Object[] mixed = receivers();
        long sum = 0;
        while (System.nanoTime() < endNs) {
            sum += virtualCalls(mixed);
        }
        SINK.addAndGet(sum);
    }

    static void icalls(long endNs) {
        Object[] mixed = receivers();
        long sum = 0;
        while (System.nanoTime() < endNs) {
            sum += interfaceCalls(mixed);
        }
        SINK.addAndGet(sum);
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
        String which = args.length > 1 ? args[1] : "delete,vcalls,icalls";
        long endNs = System.nanoTime() + (long) (seconds * 1e9);
        java.util.List<Thread> threads = new java.util.ArrayList<>();
        for (String name : which.split(",")) {
            Runnable body;
            if (name.equals("delete")) {
                body = () -> delete(endNs);
            } else if (name.equals("vcalls")) {
                body = () -> vcalls(endNs);
            } else if (name.equals("icalls")) {
                body = () -> icalls(endNs);
            } else {
                throw new IllegalArgumentException("unknown thread " + name);
            }
            Thread t = new Thread(body, name);
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
        System.out.println("done " + SINK.get());
    }
}
