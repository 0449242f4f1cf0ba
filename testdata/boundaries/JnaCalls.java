import com.sun.jna.Callback;
import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLong;
import com.sun.jna.Pointer;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Java calling native code through JNA (Debian's libjna-java), one named thread per mode, each
 * running its mode until it has used SECONDS of its own CPU time. Prints "CPU <name> <cpu-ns>"
 * per thread.
 *
 * <ul>
 *   <li>jna-qsort: libc's qsort through an interface mapping, with a Java {@link Callback} as
 *       the comparator. The comparator does real work ({@link #key}), so most samples land in
 *       Java code that native code (libffi's closure, libjnidispatch, libc's msort_with_tmp)
 *       called: below it, the thread's Java frames down to {@link #sortOnce} and Thread.run.
 *   <li>jna-crc32-direct: zlib's crc32 through direct mapping ({@code Native.register}).
 *   <li>jna-crc32-iface: zlib's crc32 through an interface mapping ({@code Native.load}).
 *   <li>jna-clinit: start-up work in static initializers, the common JNA idiom: the first use of
 *       {@link Checksums} runs its {@code <clinit>} on this thread, which loads {@link ZOnce}
 *       (its own {@code <clinit>} calls {@code Native.load}) and checksums a buffer through it
 *       for a third of the thread's CPU time, then the thread goes on calling crc32 through it.
 *       The first use is a field read in a method compiled before it (warmed up first).
 * </ul>
 * Usage: java -cp /usr/share/java/jna.jar:DIR JnaCalls SECONDS mode[,mode...]
 */
public class JnaCalls {
    /** libc, by interface mapping. */
    public interface LibC extends Library {
        /** qsort's comparator. */
        interface Comparator extends Callback {
            int invoke(Pointer a, Pointer b);
        }

        void qsort(Pointer base, long count, long size, Comparator compare);
    }

    /** zlib, by interface mapping. */
    public interface ZLib extends Library {
        NativeLong crc32(NativeLong crc, Pointer buf, int len);
    }

    /** zlib, by interface mapping, loaded by the interface's own static initializer. */
    public interface ZOnce extends Library {
        ZOnce INSTANCE = Native.load("z", ZOnce.class);

        NativeLong crc32(NativeLong crc, Pointer buf, int len);
    }

    /** The thread CPU time (ns) until which {@link Checksums}'s initializer works. */
    static volatile long clinitUntilNs;

    /** A class whose static initializer does JNA work: the thread that first uses it runs it. */
    static final class Checksums {
        static final long SEED;

        static {
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            Memory m = bytes();
            NativeLong crc = new NativeLong(0);
            while (mx.getCurrentThreadCpuTime() < clinitUntilNs) {
                crc = ZOnce.INSTANCE.crc32(crc, m, BYTES);
            }
            SEED = crc.longValue();
        }
    }

    /** {@link Checksums}'s field if {@code init}: the first such read initializes the class. */
    static long touch(boolean init) {
        return init ? Checksums.SEED : 1;
    }

    /** zlib, by direct mapping. */
    static final class ZDirect {
        static {
            Native.register("z");
        }

        static native long crc32(long crc, Pointer buf, int len);
    }

    static final int COUNT = 2_000;
    static final int BYTES = 1 << 20;
    static volatile long sink;

    /**
     * A slow key: the comparator's real work. Its loop (a long counter with a data-dependent
     * bound) keeps a safepoint poll inside it, so that compiled code has debug information in
     * this method's own scope and a sample here can name it.
     */
    static int key(int v) {
        int x = v;
        for (long i = 0; i < 40 + (v & 7); i++) {
            x = x * 0x9E3779B1 + (x >>> 15);
        }
        return x;
    }

    static final LibC.Comparator COMPARE = (a, b) -> Integer.compare(key(a.getInt(0)), key(b.getInt(0)));

    /** Fills `ints` with a fresh permutation and sorts it with libc's qsort. */
    static long sortOnce(LibC libc, Memory ints, int round) {
        for (int i = 0; i < COUNT; i++) {
            ints.setInt(4L * i, (i * 7919 + round) % COUNT);
        }
        libc.qsort(ints, COUNT, 4, COMPARE);
        return ints.getInt(0);
    }

    static Memory bytes() {
        Memory m = new Memory(BYTES);
        for (int i = 0; i < BYTES; i++) {
            m.setByte(i, (byte) (i * 31 + (i >>> 9)));
        }
        return m;
    }

    static Runnable mode(String mode, long ns, ThreadMXBean mx) {
        switch (mode) {
            case "jna-qsort": {
                LibC libc = Native.load("c", LibC.class);
                return () -> {
                    Memory ints = new Memory(4L * COUNT);
                    int round = 0;
                    while (mx.getCurrentThreadCpuTime() < ns) {
                        sink += sortOnce(libc, ints, round++);
                    }
                };
            }
            case "jna-crc32-direct":
                return () -> {
                    Memory m = bytes();
                    long crc = 0;
                    while (mx.getCurrentThreadCpuTime() < ns) {
                        crc = ZDirect.crc32(crc, m, BYTES);
                    }
                    sink += crc;
                };
            case "jna-crc32-iface": {
                ZLib z = Native.load("z", ZLib.class);
                return () -> {
                    Memory m = bytes();
                    NativeLong crc = new NativeLong(0);
                    while (mx.getCurrentThreadCpuTime() < ns) {
                        crc = z.crc32(crc, m, BYTES);
                    }
                    sink += crc.longValue();
                };
            }
            case "jna-clinit":
                return () -> {
                    clinitUntilNs = ns / 3;
                    // The initializer is triggered from compiled code: `touch` is compiled
                    // (C1 first) before it reads the class's field, through a patching stub.
                    for (int i = 0; i < 20_000; i++) {
                        sink += touch(false);
                    }
                    try {
                        Thread.sleep(300);
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                    long seed = touch(true);
                    Memory m = bytes();
                    NativeLong crc = new NativeLong(seed);
                    while (mx.getCurrentThreadCpuTime() < ns) {
                        crc = ZOnce.INSTANCE.crc32(crc, m, BYTES);
                    }
                    sink += crc.longValue();
                };
            default:
                throw new IllegalArgumentException("unknown mode " + mode);
        }
    }

    public static void main(String[] args) throws Exception {
        long ns = (long) (Double.parseDouble(args[0]) * 1e9);
        String[] modes = args[1].split(",");
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        Thread[] threads = new Thread[modes.length];
        long[] cpu = new long[modes.length];
        for (int i = 0; i < modes.length; i++) {
            final int k = i;
            final Runnable work = mode(modes[i], ns, mx);
            threads[i] = new Thread(() -> {
                work.run();
                cpu[k] = mx.getCurrentThreadCpuTime();
            }, modes[i]);
        }
        for (Thread t : threads) t.start();
        for (Thread t : threads) t.join();
        for (int i = 0; i < modes.length; i++) {
            System.out.println("CPU " + threads[i].getName() + " " + cpu[i]);
        }
    }
}
