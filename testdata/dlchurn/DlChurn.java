import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * Memory test workload: one thread loads and unloads a small library (dlopen/dlclose, from JNI;
 * each time a fresh copy written into COPY_DIR) over and over for SECONDS of wall time, while
 * another burns CPU in Java. The process's resident set (VmRSS) is read at 25% and at 100% of
 * the run.
 *
 * <p>Prints "CYCLES n", "RSS 25 <kB>" and "RSS 100 <kB>".
 *
 * <p>Usage: java -Djava.library.path=DIR DlChurn SECONDS /path/to/libchurn.so COPY_DIR
 */
public class DlChurn {
    static native long churn(String library, String dir, long ns);

    static volatile long sink;
    static volatile boolean done;

    static long rssKb() throws Exception {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        throw new IllegalStateException("no VmRSS");
    }

    public static void main(String[] args) throws Exception {
        System.loadLibrary("dlchurn");
        long ns = (long) (Double.parseDouble(args[0]) * 1e9);
        String path = args[1];
        String copyDir = args[2];
        long[] cycles = new long[1];
        Thread churn = new Thread(() -> cycles[0] = churn(path, copyDir, ns), "churn");
        Thread busy = new Thread(() -> {
            long x = 1;
            while (!done) {
                for (int i = 0; i < 100_000; i++) {
                    x = x * 6364136223846793005L + 1442695040888963407L;
                }
                sink += x;
            }
        }, "busy");
        busy.start();
        churn.start();
        Thread.sleep(ns / 4 / 1_000_000);
        long rss25 = rssKb();
        churn.join();
        done = true;
        busy.join();
        long rss100 = rssKb();
        System.out.println("CYCLES " + cycles[0]);
        System.out.println("RSS 25 " + rss25);
        System.out.println("RSS 100 " + rss100);
        if (cycles[0] < 0) {
            throw new IllegalStateException("cannot load " + path);
        }
    }
}
