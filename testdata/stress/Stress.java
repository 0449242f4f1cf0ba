import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongUnaryOperator;

/**
 * Stress program for the agent: everything that is hard on a sampling signal handler, at once,
 * for a while. Run with -Xmx64m (the GC storm) and the agent at 1 ms. Parts, each on its own
 * threads, all until the deadline:
 *
 * <ul>
 *   <li>threads: at least {@code threads} short-lived platform threads, started and joined in
 *       batches of 100 (each allocates, computes and makes a JNI call);
 *   <li>dlopen: dlopen/dlsym/call/dlclose of libchurn*.so in a loop, from JNI;
 *   <li>gc: garbage of every size with a live set of about 16 MB, System.gc() now and then;
 *   <li>deopt: rounds of a hot method compiled against one receiver type (class hierarchy
 *       analysis, one subclass loaded) then called with new subclasses: the class loads
 *       invalidate its code, the new receivers hit its type checks; every round in a fresh class
 *       loader, so the storm repeats and the old rounds' classes get unloaded;
 *   <li>vthreads (JDK 21+, found by reflection; skipped on 17): virtual threads that sleep, park,
 *       hold monitors, call JNI and overflow their stacks;
 *   <li>soe-java: deep Java recursion until StackOverflowError, caught, on threads with default
 *       and small stacks;
 *   <li>soe-jni: Java -> native -> Java recursion (CallStaticVoidMethod) until StackOverflowError,
 *       caught in Java;
 *   <li>signals: the external sender ({@code sender=}) sends {@code signals} junk signals of
 *       number {@code signal} to this JVM's threads over the run.
 * </ul>
 *
 * <p>Usage: {@code java -Xmx64m -Djava.library.path=DIR -cp DIR Stress [seconds=8]
 * [threads=10000] [churn=DIR] [sender=PATH signal=N] [signals=10000]}. {@code churn} is the
 * directory of libchurn*.so (default: the first entry of java.library.path). Prints one line per
 * part, then "STRESS OK" and exits 0; or "STRESS FAILED: ..." and exits 2 if a part failed or did
 * nothing.
 */
public class Stress {
    static volatile long sink;
    static long deadline;
    static final Map<String, String> ARGS = new HashMap<>();
    static final List<String> FAILURES = new ArrayList<>();

    static int intArg(String name, int def) {
        return ARGS.containsKey(name) ? Integer.parseInt(ARGS.get(name)) : def;
    }

    static boolean running() {
        return System.nanoTime() < deadline;
    }

    static synchronized void fail(String what) {
        FAILURES.add(what);
    }

    /** A part: a loop on its own thread; its count goes into the report. */
    abstract static class Part implements Runnable {
        final String name;
        final AtomicLong count = new AtomicLong();
        Thread thread;

        Part(String name) {
            this.name = name;
        }

        abstract void loop() throws Exception;

        /** Extra text for the report. */
        String detail() {
            return "";
        }

        /** Whether the part did enough; by default, anything. */
        boolean enough() {
            return count.get() > 0;
        }

        @Override
        public void run() {
            try {
                loop();
            } catch (Throwable t) {
                System.err.println("part " + name + " failed:");
                t.printStackTrace();
                fail(name + ": " + t);
            }
        }
    }

    // ------------------------------------------------------------------ threads

    static long work(int seed) {
        long h = seed;
        int[] a = new int[64 + (seed & 255)];
        for (int i = 0; i < a.length; i++) {
            a[i] = (int) (h = h * 6364136223846793005L + 1442695040888963407L);
        }
        return h ^ a[seed % a.length];
    }

    static final class Threads extends Part {
        final int target;
        final String[] churn;

        Threads(int target, String[] churn) {
            super("threads");
            this.target = target;
            this.churn = churn;
        }

        @Override
        void loop() throws Exception {
            int n = 0;
            while (running() || count.get() < target) {
                Thread[] batch = new Thread[100];
                for (int i = 0; i < batch.length; i++) {
                    final int seed = n++;
                    batch[i] = new Thread(() -> {
                        long s = 0;
                        for (int k = 0; k < 20; k++) s += work(seed + k);
                        if (seed % 10 == 0) s += Jni.dlchurn(churn, 1);
                        sink += s;
                    }, "short-" + seed);
                    batch[i].start();
                }
                for (Thread t : batch) t.join();
                count.addAndGet(batch.length);
            }
        }

        @Override
        boolean enough() {
            return count.get() >= target;
        }
    }

    // ------------------------------------------------------------------ dlopen

    static final class Dlopen extends Part {
        final String[] churn;

        Dlopen(String[] churn) {
            super("dlopen");
            this.churn = churn;
        }

        @Override
        void loop() {
            while (running()) count.addAndGet(Jni.dlchurn(churn, 50));
        }
    }

    // ------------------------------------------------------------------ gc

    static final class Gc extends Part {
        long before;

        Gc() {
            super("gc");
            before = collections();
        }

        static long collections() {
            long n = 0;
            for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
                n += Math.max(0, gc.getCollectionCount());
            }
            return n;
        }

        @Override
        void loop() {
            // About 16 MB kept alive in a ring, replaced piece by piece: objects survive a few
            // young collections and get promoted, then die in the old generation.
            Object[] ring = new Object[512];
            ThreadLocalRandom r = ThreadLocalRandom.current();
            long lastGc = System.nanoTime();
            long bytes = 0;
            while (running()) {
                for (int i = 0; i < 1000; i++) {
                    boolean big = r.nextInt(16) == 0;
                    int size = big ? (16 << 10) + r.nextInt(48 << 10) : r.nextInt(512);
                    byte[] b = new byte[size];
                    bytes += size;
                    if ((i & 7) == 0) ring[r.nextInt(ring.length)] = b;
                    List<Object> junk = new ArrayList<>();
                    for (int k = 0; k < 8; k++) junk.add(new long[k + 1]);
                    sink += junk.size() + b.length;
                }
                if (System.nanoTime() - lastGc > 500_000_000L) {
                    System.gc();
                    lastGc = System.nanoTime();
                }
            }
            count.set(bytes >> 20);
        }

        @Override
        String detail() {
            return "MB allocated, " + (collections() - before) + " collections";
        }

        @Override
        boolean enough() {
            return count.get() > 0 && collections() > before;
        }
    }

    // ------------------------------------------------------------------ deopt

    /** Defines the Dyn* classes itself (child first), from the class files beside Stress. */
    static final class DynLoader extends ClassLoader {
        static final Map<String, byte[]> BYTES = new HashMap<>();

        static {
            for (String n : new String[] {"DynBase", "DynA", "DynB", "DynC", "DynD", "DynHot"}) {
                try (InputStream in = Stress.class.getResourceAsStream("/" + n + ".class")) {
                    ByteArrayOutputStream out = new ByteArrayOutputStream();
                    in.transferTo(out);
                    BYTES.put(n, out.toByteArray());
                } catch (IOException e) {
                    throw new ExceptionInInitializerError(e);
                }
            }
        }

        DynLoader() {
            super(Stress.class.getClassLoader());
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            byte[] b = BYTES.get(name);
            if (b == null) return super.loadClass(name, resolve);
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                return c != null ? c : defineClass(name, b, 0, b.length);
            }
        }
    }

    /** A receiver type flip in the app loader, on top of the fresh loaders' rounds. */
    interface Shape {
        long area(long x);
    }

    static final class Square implements Shape {
        public long area(long x) {
            return x * x;
        }
    }

    static final class Circle implements Shape {
        public long area(long x) {
            return 3 * x * x;
        }
    }

    static final class Line implements Shape {
        public long area(long x) {
            return x;
        }
    }

    static long shapes(Shape s, int n) {
        long t = 0;
        for (int i = 0; i < n; i++) t += s.area(i);
        return t;
    }

    static final class Deopt extends Part {
        Deopt() {
            super("deopt");
        }

        @Override
        void loop() throws Exception {
            Shape[] flip = {new Square(), new Circle(), new Line()};
            int round = 0;
            while (running()) {
                Class<?> hot = new DynLoader().loadClass("DynHot");
                var ctor = hot.getDeclaredConstructor();
                ctor.setAccessible(true);
                LongUnaryOperator op = (LongUnaryOperator) ctor.newInstance();
                sink += op.applyAsLong(round);
                // Long monomorphic phases, then the type flips.
                for (int i = 0; i < 200; i++) sink += shapes(flip[(round + i / 150) % 3], 500);
                round++;
                count.incrementAndGet();
            }
        }

        @Override
        String detail() {
            return "rounds";
        }
    }

    // ------------------------------------------------------------------ vthreads

    /** Executors.newVirtualThreadPerTaskExecutor() on JDK 21+, null before. */
    static ExecutorService virtualThreads() {
        try {
            Method m = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
            return (ExecutorService) m.invoke(null);
        } catch (ReflectiveOperationException | UnsupportedOperationException e) {
            return null;
        }
    }

    static boolean isVirtual(Thread t) {
        try {
            return (Boolean) Thread.class.getMethod("isVirtual").invoke(t);
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }

    static final Object MONITOR = new Object();

    static final class VThreads extends Part {
        final String[] churn;
        final AtomicLong overflows = new AtomicLong();
        final AtomicLong notVirtual = new AtomicLong();

        VThreads(String[] churn) {
            super("vthreads");
            this.churn = churn;
        }

        @Override
        void loop() throws Exception {
            ExecutorService ex = virtualThreads();
            if (ex == null) return;
            while (running()) {
                List<Future<?>> tasks = new ArrayList<>();
                for (int i = 0; i < 500; i++) {
                    final int k = i;
                    tasks.add(ex.submit(() -> {
                        if (!isVirtual(Thread.currentThread())) notVirtual.incrementAndGet();
                        long s = work(k);
                        switch (k % 6) {
                            case 0:
                                try {
                                    Thread.sleep(1);
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                }
                                break;
                            case 1:
                                LockSupport.parkNanos(200_000);
                                break;
                            case 2:
                                synchronized (MONITOR) {
                                    s += work(k + 1);
                                    Thread.yield();
                                }
                                break;
                            case 3:
                                s += Jni.dlchurn(churn, 1);
                                break;
                            case 4:
                                if (k % 60 == 4) {
                                    javaOverflow();
                                    overflows.incrementAndGet();
                                }
                                break;
                            default:
                                for (int j = 0; j < 50; j++) s += work(k + j);
                        }
                        sink += s;
                        count.incrementAndGet();
                    }));
                }
                for (Future<?> f : tasks) f.get();
            }
            ex.shutdown();
            if (!ex.awaitTermination(60, TimeUnit.SECONDS)) {
                throw new AssertionError("virtual threads did not end");
            }
        }

        @Override
        String detail() {
            if (virtualThreads() == null) return "(no virtual threads before JDK 21: skipped)";
            return "tasks, " + overflows.get() + " StackOverflowErrors caught, " + notVirtual.get()
                    + " not virtual";
        }

        @Override
        boolean enough() {
            return virtualThreads() == null
                    || (count.get() > 0 && overflows.get() > 0 && notVirtual.get() == 0);
        }
    }

    // ------------------------------------------------------------------ StackOverflowError

    static int deepest;

    static long down(int depth, long a, long b) {
        if (depth > deepest) deepest = depth;
        return down(depth + 1, b, a + b) + a;
    }

    /** Recursion in Java until StackOverflowError, caught; returns the depth reached. */
    static int javaOverflow() {
        deepest = 0;
        try {
            sink += down(0, 1, 1);
        } catch (StackOverflowError e) {
            return deepest;
        }
        throw new AssertionError("the recursion returned");
    }

    static final class SoeJava extends Part {
        SoeJava() {
            super("soe-java");
        }

        @Override
        void loop() throws Exception {
            int i = 0;
            while (running()) {
                if (i++ % 4 == 0) {
                    Thread small = new Thread(null, () -> {
                        javaOverflow();
                        count.incrementAndGet();
                    }, "soe-small", 256 << 10);
                    small.start();
                    small.join();
                } else {
                    javaOverflow();
                    count.incrementAndGet();
                }
            }
        }

        @Override
        String detail() {
            return "StackOverflowErrors caught";
        }
    }

    static final class SoeJni extends Part {
        SoeJni() {
            super("soe-jni");
        }

        @Override
        void loop() {
            while (running()) {
                sink += Jni.overflow().getStackTrace().length;
                count.incrementAndGet();
            }
        }

        @Override
        String detail() {
            return "StackOverflowErrors caught";
        }
    }

    // ------------------------------------------------------------------ signals

    static final class Signals extends Part {
        final String sender;
        final int signal;
        final int signals;
        final long millis;
        String report = "";

        Signals(String sender, int signal, int signals, long millis) {
            super("signals");
            this.sender = sender;
            this.signal = signal;
            this.signals = signals;
            this.millis = millis;
        }

        @Override
        void loop() throws Exception {
            Process p = new ProcessBuilder(sender, Long.toString(ProcessHandle.current().pid()),
                    Integer.toString(signal), Integer.toString(signals), Long.toString(millis))
                    .redirectErrorStream(true).start();
            byte[] bytes = p.getInputStream().readAllBytes();
            String out = new String(bytes, StandardCharsets.UTF_8).trim();
            int code = p.waitFor();
            report = out;
            if (code != 0) {
                throw new AssertionError("the signal sender exited with " + code + ": " + out);
            }
            count.set(signals);
        }

        @Override
        String detail() {
            return "signal " + signal + ": " + report;
        }
    }

    // ------------------------------------------------------------------ main

    public static void main(String[] args) throws Exception {
        for (String a : args) {
            int eq = a.indexOf('=');
            if (eq < 0) throw new IllegalArgumentException("expected key=value: " + a);
            ARGS.put(a.substring(0, eq), a.substring(eq + 1));
        }
        double seconds = Double.parseDouble(ARGS.getOrDefault("seconds", "8"));
        String churnDir = ARGS.getOrDefault("churn",
                System.getProperty("java.library.path").split(java.io.File.pathSeparator)[0]);
        String[] churn = new String[4];
        for (int i = 0; i < churn.length; i++) churn[i] = churnDir + "/libchurn" + i + ".so";
        long millis = (long) (seconds * 1000);
        deadline = System.nanoTime() + millis * 1_000_000L;

        List<Part> parts = new ArrayList<>(List.of(
                new Threads(intArg("threads", 10000), churn),
                new Dlopen(churn),
                new Gc(),
                new Deopt(),
                new VThreads(churn),
                new SoeJava(),
                new SoeJni()));
        if (ARGS.containsKey("sender") && intArg("signals", 10000) > 0) {
            if (!ARGS.containsKey("signal")) {
                throw new IllegalArgumentException("sender= needs signal=");
            }
            parts.add(new Signals(ARGS.get("sender"), intArg("signal", 0), intArg("signals", 10000),
                    Math.max(0, millis - 500)));
        }
        for (Part p : parts) {
            p.thread = new Thread(p, "part-" + p.name);
            p.thread.start();
        }
        for (Part p : parts) {
            p.thread.join();
            System.out.println(p.name + " " + p.count.get() + " " + p.detail());
            if (!p.enough()) {
                fail(p.name + " did not do enough: " + p.count.get() + " " + p.detail());
            }
        }
        if (!FAILURES.isEmpty()) {
            System.out.println("STRESS FAILED: " + String.join("; ", FAILURES));
            System.exit(2);
        }
        System.out.println("STRESS OK");
    }
}

// The classes of the deoptimization rounds, defined anew by every round's DynLoader.

abstract class DynBase {
    abstract long f(long x);
}

class DynA extends DynBase {
    long f(long x) {
        return x * 3 + 1;
    }
}

class DynB extends DynBase {
    long f(long x) {
        return x ^ (x >>> 3);
    }
}

class DynC extends DynBase {
    long f(long x) {
        return x + 7;
    }
}

class DynD extends DynBase {
    long f(long x) {
        return x * x - 1;
    }
}

/**
 * One deoptimization round: {@code sum} gets hot with DynA the only subclass of DynBase loaded
 * (class hierarchy analysis lets the compiler bind b.f to DynA.f), then DynB is loaded
 * (invalidating that code) and used, then DynC and DynD (the call site goes from monomorphic to
 * bimorphic to megamorphic, each change a failed type check in compiled code).
 */
class DynHot implements LongUnaryOperator {
    static long sum(DynBase b, int n) {
        long s = 0;
        for (int i = 0; i < n; i++) s += b.f(i);
        return s;
    }

    /** Calls sum with receivers from {@code bs} in turn, 300 times and for at least {@code ms}. */
    static long phase(DynBase[] bs, long ms) {
        long s = 0;
        long end = System.nanoTime() + ms * 1_000_000L;
        for (int i = 0; i < 300 || System.nanoTime() < end; i++) s += sum(bs[i % bs.length], 1000);
        return s;
    }

    @Override
    public long applyAsLong(long seed) {
        DynBase a = new DynA();
        // Long enough for the compiler to finish with DynA alone; then DynB's load invalidates.
        long s = seed + phase(new DynBase[] {a}, 20);
        DynBase b = new DynB();
        // Short phases hit the type checks of code compiled for fewer receivers.
        s += phase(new DynBase[] {a, b}, 0) + phase(new DynBase[] {a, b}, 10);
        DynBase[] all = {a, b, new DynC(), new DynD()};
        return s + phase(all, 0) + phase(all, 10);
    }
}
