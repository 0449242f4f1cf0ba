import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The whole-process tests' program (threads=all):
 * <ul>
 * <li>{@code alloc SECONDS}: two threads store fresh objects into a long-lived array (the GC
 * threads get busy);
 * <li>{@code pthreads SECONDS}: one busy Java thread; after a second, a JNI library starts two
 * pthreads of its own, named with prctl ({@code zlib-worker-0}, {@code -1}), that compress
 * with zlib until the end;
 * <li>{@code churn COUNT}: the JNI library starts COUNT short-lived pthreads, a few at a time.
 * </ul>
 * At the end it prints every thread's CPU time as the kernel counts it
 * ({@code TASK<tab>name<tab>ns}, from /proc/self/task/TID/schedstat) and the workers' lines; the
 * allocating threads print their own line as they end (they are gone by then).
 */
public class WholeProcess {
    static native void startWorkers(int count, double seconds);
    static native String joinWorkers();
    static native int churn(int count);

    static volatile Object[] keep = new Object[1 << 16];
    static volatile long sink;

    static void allocate(long endNs, int seed) {
        int i = seed;
        while (System.nanoTime() < endNs) {
            for (int k = 0; k < 10_000; k++) {
                i = (i * 1103515245 + 12345) & 0x7fffffff;
                keep[i & (keep.length - 1)] = new byte[64 + (i & 511)];
            }
        }
    }

    static void burn(long endNs) {
        long x = 1;
        while (System.nanoTime() < endNs) {
            for (int k = 0; k < 1_000_000; k++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        sink = x;
    }

    public static void main(String[] args) throws Exception {
        System.loadLibrary("wholeproc");
        String mode = args[0];
        double seconds = Double.parseDouble(args[1]);
        long end = System.nanoTime() + (long) (seconds * 1e9);
        if (mode.equals("alloc")) {
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                int seed = t + 1;
                threads.add(new Thread(() -> {
                    allocate(end, seed);
                    printSelf();
                }, "allocator-" + t));
            }
            for (Thread t : threads) t.start();
            for (Thread t : threads) t.join();
        } else if (mode.equals("pthreads")) {
            burn(System.nanoTime() + 1_000_000_000L);
            startWorkers(2, seconds - 1);
            burn(end);
            System.out.print(joinWorkers());
        } else if (mode.equals("churn")) {
            System.out.println("CHURNED\t" + churn((int) seconds));
        } else {
            throw new IllegalArgumentException(mode);
        }
        printTasks();
    }

    /** The calling thread's TASK line, before it ends (printTasks sees only live threads). */
    static void printSelf() {
        try {
            String name = Files.readString(Path.of("/proc/thread-self/comm")).strip();
            String ns = Files.readString(Path.of("/proc/thread-self/schedstat")).split(" ")[0];
            System.out.println("TASK\t" + name + "\t" + ns);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static void printTasks() throws Exception {
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path task : (Iterable<Path>) tasks::iterator) {
                try {
                    String name = Files.readString(task.resolve("comm")).strip();
                    String ns = Files.readString(task.resolve("schedstat")).split(" ")[0];
                    System.out.println("TASK\t" + name + "\t" + ns);
                } catch (java.io.IOException gone) {
                    // the thread exited meanwhile
                }
            }
        }
    }
}
