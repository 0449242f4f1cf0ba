import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * Puts the sampled thread where the agent used to crash or hang the JVM (see hardening.c), or
 * builds the thread layouts the agent used to get wrong. Prints DONE when it ends normally.
 *
 * <p>Usage: java -Djava.library.path=DIR Hardening MODE ARGS
 * <ul>
 *   <li>guard LEFT SECONDS: spin in C with LEFT bytes of usable stack below;
 *   <li>fiber SECONDS: spin on a makecontext fiber stack, rbp in an unmapped gap;
 *   <li>altstack SIGNAL SECONDS: spin in a handler on an alternate signal stack, rbp in a gap;
 *   <li>guardpage SECONDS: spin with rbp in a page of the thread's stack made unreadable;
 *   <li>names SECONDS: three threads named "same", two threads whose Java name differs from
 *       their kernel name ("kernel-N" renamed "java-N" by another thread), each printing
 *       "TID name tid", then spinning for SECONDS; with the argument "rename", renames them
 *       all "again-N" when a line arrives on stdin, and prints RENAMED;
 *   <li>idle N SECONDS: starts N sleeping threads; prints "RSS before after" in kB.
 * </ul>
 */
public class Hardening {
    static native long nearGuard(long left, double seconds);

    static native int onFiber(double seconds);

    static native int onAltStack(int signal, double seconds);

    static native int guardPage(double seconds);

    static native int gettid();

    static volatile long sink;

    static void spinJava(long untilNanos) {
        long x = 1;
        while (System.nanoTime() < untilNanos) {
            for (int i = 0; i < 100_000; i++) {
                x = x * 6364136223846793005L + i;
            }
        }
        sink = x;
    }

    static long rssKb() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return -1;
    }

    static void names(double seconds, boolean rename) throws Exception {
        long until = System.nanoTime() + (long) (seconds * 1e9);
        List<Thread> threads = new ArrayList<>();
        CountDownLatch started = new CountDownLatch(5);
        CountDownLatch renamed = new CountDownLatch(1);
        for (int i = 0; i < 5; i++) {
            String name = i < 3 ? "same" : "kernel-" + i;
            Thread t = new Thread(() -> {
                int tid = gettid();
                started.countDown();
                try {
                    renamed.await();
                } catch (InterruptedException e) {
                    return;
                }
                System.out.println("TID " + Thread.currentThread().getName() + " " + tid);
                spinJava(until);
            }, name);
            threads.add(t);
            t.start();
        }
        started.await();
        // Renamed from this thread: the kernel keeps the old name.
        for (int i = 3; i < 5; i++) {
            threads.get(i).setName("java-" + i);
        }
        renamed.countDown();
        if (rename) {
            new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
            for (int i = 0; i < 5; i++) {
                threads.get(i).setName("again-" + i);
            }
            System.out.println("RENAMED");
        }
        for (Thread t : threads) {
            t.join();
        }
    }

    public static void main(String[] args) throws Exception {
        System.loadLibrary("hardening");
        String mode = args[0];
        switch (mode) {
            case "guard": {
                long left = Long.parseLong(args[1]);
                double seconds = Double.parseDouble(args[2]);
                long[] reached = new long[1];
                // A thread of its own with a known, ample stack.
                Thread t = new Thread(null, () -> reached[0] = nearGuard(left, seconds), "guard", 4 << 20);
                t.start();
                t.join();
                System.out.println("REACHED " + reached[0]);
                break;
            }
            case "fiber":
                System.out.println("FIBER " + onFiber(Double.parseDouble(args[1])));
                break;
            case "altstack":
                System.out.println("ALTSTACK " + onAltStack(Integer.parseInt(args[1]), Double.parseDouble(args[2])));
                break;
            case "guardpage":
                System.out.println("GUARDPAGE " + guardPage(Double.parseDouble(args[1])));
                break;
            case "names":
                names(Double.parseDouble(args[1]), args.length > 2 && args[2].equals("rename"));
                break;
            case "idle": {
                int n = Integer.parseInt(args[1]);
                long before = rssKb();
                CountDownLatch up = new CountDownLatch(n);
                List<Thread> threads = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    Thread t = new Thread(() -> {
                        up.countDown();
                        try {
                            Thread.sleep((long) (Double.parseDouble(args[2]) * 1000));
                        } catch (InterruptedException e) {
                            // ends
                        }
                    }, "idle-" + i);
                    t.setDaemon(true);
                    t.start();
                    threads.add(t);
                }
                up.await();
                Thread.sleep(500);
                System.out.println("RSS " + before + " " + rssKb());
                break;
            }
            default:
                throw new IllegalArgumentException(mode);
        }
        System.out.println("DONE");
    }
}
