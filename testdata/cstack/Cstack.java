import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.zip.Deflater;

/**
 * Test workload for native unwinding: one named thread per mode, each running its mode until
 * it has used SECONDS of its own CPU time. Prints "CPU <name> <cpu-ns>" per thread.
 *
 * <p>Modes (the thread is named after its mode):
 * <ul>
 *   <li>chain-plain, chain-fp, chain-nofp: Java_Chain*_burn -> chain_outer -> chain_middle ->
 *       chain_leaf, from one C source built with -O2, -O2 -fno-omit-frame-pointer and
 *       -O2 -fomit-frame-pointer;
 *   <li>libz: compress2 of the system zlib, from JNI;
 *   <li>jdkdeflate: java.util.zip.Deflater, no JNI code of ours;
 *   <li>memcpy: memcpy and memset of 64 MiB, from JNI;
 *   <li>qsort: libc's qsort with a frameless comparator, from JNI;
 *   <li>malloc: malloc/free churn, from JNI;
 *   <li>vdso: clock_gettime(CLOCK_MONOTONIC) through the vDSO, from JNI;
 *   <li>nanotime: System.nanoTime(), through the JVM into the vDSO;
 *   <li>upcall: JNI code calling Java ({@link #upcallWork}) through the VM's call stub.
 * </ul>
 * Usage: java -Djava.library.path=DIR Cstack SECONDS mode[,mode...]
 */
public class Cstack {
    static native long libz(int reps);

    static native long memcpy(int reps);

    static native long qsort(int reps);

    static native long malloc(int reps);

    static native long vdso(int reps);
    static native long upcall(int reps);

    /** The Java side of the upcall mode: arithmetic, called from native code. */
    static long upcallWork(int n) {
        long x = 0x2545f4914f6cdd1dL;
        for (int i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
        }
        return x;
    }

    static volatile long sink;

    static final byte[] TEXT = text(2 << 20);

    /** Random words from a small vocabulary: compressible, but deflate has to search. */
    static byte[] text(int n) {
        String[] words = {"native", "frame", "stack", "unwind", "sample", "thread", "java", "zlib"};
        StringBuilder sb = new StringBuilder(n + 16);
        long x = 0x2545f4914f6cdd1dL;
        while (sb.length() < n) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            sb.append(words[(int) ((x >>> 1) % words.length)]).append((x & 7) == 0 ? '\n' : ' ');
        }
        return sb.substring(0, n).getBytes();
    }

    static long deflate() {
        Deflater d = new Deflater(6);
        d.setInput(TEXT);
        d.finish();
        byte[] out = new byte[64 << 10];
        long total = 0;
        while (!d.finished()) {
            total += d.deflate(out);
        }
        d.end();
        return total;
    }

    static long nanotime() {
        long total = 0;
        for (int i = 0; i < 1_000_000; i++) {
            total += System.nanoTime();
        }
        return total;
    }

    /** One round of `mode`; the chains burn at most `ns` of CPU time. */
    static long step(String mode, long ns) {
        long slice = Math.min(ns, 50_000_000L);
        switch (mode) {
            case "chain-plain": return ChainPlain.burn(slice);
            case "chain-fp": return ChainFp.burn(slice);
            case "chain-nofp": return ChainNofp.burn(slice);
            case "libz": return libz(1);
            case "jdkdeflate": return deflate();
            case "memcpy": return memcpy(1);
            case "qsort": return qsort(1);
            case "malloc": return malloc(1);
            case "vdso": return vdso(1);
            case "nanotime": return nanotime();
            case "upcall": return upcall(20);
            default: throw new IllegalArgumentException("unknown mode " + mode);
        }
    }

    public static void main(String[] args) throws Exception {
        System.loadLibrary("cstack");
        // No pause after loading: the agent must know each library, with its unwind table,
        // from the first call of its JNI functions on.
        for (Class<?> c : new Class<?>[] {ChainPlain.class, ChainFp.class, ChainNofp.class}) {
            Class.forName(c.getName(), true, Cstack.class.getClassLoader());
        }
        long ns = (long) (Double.parseDouble(args[0]) * 1e9);
        String[] modes = args[1].split(",");
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        Thread[] threads = new Thread[modes.length];
        long[] cpu = new long[modes.length];
        for (int i = 0; i < modes.length; i++) {
            final int k = i;
            final String mode = modes[i];
            threads[i] = new Thread(() -> {
                long used;
                while ((used = mx.getCurrentThreadCpuTime()) < ns) {
                    sink += step(mode, ns - used);
                }
                cpu[k] = mx.getCurrentThreadCpuTime();
            }, mode);
        }
        for (Thread t : threads) t.start();
        for (Thread t : threads) t.join();
        for (int i = 0; i < modes.length; i++) {
            System.out.println("CPU " + threads[i].getName() + " " + cpu[i]);
        }
    }
}

/** The chain built with plain -O2 (libchainplain.so). */
class ChainPlain {
    static {
        System.loadLibrary("chainplain");
    }

    static native long burn(long ns);
}

/** The chain built with -O2 -fno-omit-frame-pointer (libchainfp.so). */
class ChainFp {
    static {
        System.loadLibrary("chainfp");
    }

    static native long burn(long ns);
}

/** The chain built with -O2 -fomit-frame-pointer (libchainnofp.so). */
class ChainNofp {
    static {
        System.loadLibrary("chainnofp");
    }

    static native long burn(long ns);
}
