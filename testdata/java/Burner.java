import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Test workload: named threads burn known amounts of CPU time, either in the JNI library's
 * native chain (mode "native") or in pure Java (mode "java"); mode "churn" runs short-lived
 * threads one after the other instead, each burning 20 ms, named NAME-n-I (native) and
 * NAME-j-I (Java) in turn; mode "masked" runs the native chain in 100 ms slices with every
 * signal blocked (but the fault signals). Prints one line per thread:
 * "CPU <name> <tid-unknown> <cpu-ns>" with the thread's CPU time from ThreadMXBean.
 * Usage: java -Djava.library.path=DIR Burner SECONDS name:mode[,name:mode...]
 */
public class Burner {
    static native long nativeBurn(long ns);

    static native long maskedBurn(long ns);

    static volatile long sink;

    static void javaBurn(long ns) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long end = mx.getCurrentThreadCpuTime() + ns;
        long x = 1;
        while (mx.getCurrentThreadCpuTime() < end) {
            for (int i = 0; i < 100_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
            sink += x;
        }
    }

    static void nativeLoop(long totalNs) {
        long slice = 50_000_000L;
        for (long done = 0; done < totalNs; done += slice) {
            sink += nativeBurn(Math.min(slice, totalNs - done));
        }
    }

    static void maskedLoop(long totalNs) {
        long slice = 100_000_000L;
        for (long done = 0; done < totalNs; done += slice) {
            sink += maskedBurn(Math.min(slice, totalNs - done));
        }
    }

    static void churn(String name, long totalNs) {
        long slice = 20_000_000L;
        for (long i = 0; i * slice < totalNs; i++) {
            final boolean nat = i % 2 == 0;
            Thread t = new Thread(() -> {
                if (nat) nativeLoop(slice); else javaBurn(slice);
            }, name + (nat ? "-n-" : "-j-") + i);
            t.start();
            try {
                t.join();
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        System.loadLibrary("burner");
        long ns = (long) (Double.parseDouble(args[0]) * 1e9);
        String[] specs = args[1].split(",");
        Thread[] threads = new Thread[specs.length];
        long[] cpu = new long[specs.length];
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        for (int i = 0; i < specs.length; i++) {
            String[] s = specs[i].split(":");
            final int k = i;
            final boolean nat = s[1].equals("native");
            final boolean churn = s[1].equals("churn");
            final boolean masked = s[1].equals("masked");
            final String name = s[0];
            threads[i] = new Thread(() -> {
                if (churn) churn(name, ns);
                else if (masked) maskedLoop(ns);
                else if (nat) nativeLoop(ns);
                else javaBurn(ns);
                cpu[k] = mx.getCurrentThreadCpuTime();
            }, s[0]);
        }
        for (Thread t : threads) t.start();
        for (Thread t : threads) t.join();
        for (int i = 0; i < specs.length; i++) {
            System.out.println("CPU " + threads[i].getName() + " " + cpu[i]);
        }
    }
}
