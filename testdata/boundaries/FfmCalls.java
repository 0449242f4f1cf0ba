import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Java calling native code through the FFM API ({@code java.lang.foreign}, JDK 22+), one named
 * thread per mode, each running its mode until it has used SECONDS of its own CPU time. Prints
 * "CPU <name> <cpu-ns>" per thread.
 *
 * <ul>
 *   <li>ffm-crc32: zlib's crc32 through a downcall handle.
 *   <li>ffm-compress: zlib's compress through a downcall handle.
 *   <li>ffm-critical: zlib's crc32 through a critical downcall ({@code Linker.Option.critical}:
 *       no thread-state transition around the call).
 *   <li>ffm-qsort: libc's qsort through a downcall handle, with a Java comparator behind an
 *       upcall stub. The comparator does real work ({@link #key}), so most samples land in Java
 *       code that libc's msort_with_tmp called: below it, the upcall stub, libc's sort frames,
 *       then {@link #sortOnce} and Thread.run.
 * </ul>
 * Usage: java --enable-native-access=ALL-UNNAMED -cp DIR FfmCalls SECONDS mode[,mode...]
 */
public class FfmCalls {
    static final Linker LINKER = Linker.nativeLinker();
    static final SymbolLookup ZLIB = SymbolLookup.libraryLookup("libz.so.1", Arena.global());
    static final FunctionDescriptor CRC32_TYPE =
            FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_INT);
    static final MethodHandle CRC32 = LINKER.downcallHandle(zlib("crc32"), CRC32_TYPE);
    static final MethodHandle CRC32_CRITICAL =
            LINKER.downcallHandle(zlib("crc32"), CRC32_TYPE, Linker.Option.critical(false));
    static final MethodHandle COMPRESS = LINKER.downcallHandle(zlib("compress"),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG));
    static final MethodHandle QSORT = LINKER.downcallHandle(
            LINKER.defaultLookup().find("qsort").orElseThrow(),
            FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS));
    static final FunctionDescriptor COMPARE_TYPE = FunctionDescriptor.of(JAVA_INT,
            ADDRESS.withTargetLayout(JAVA_INT), ADDRESS.withTargetLayout(JAVA_INT));

    static final int COUNT = 2_000;
    static final int BYTES = 1 << 20;
    static final int COMPRESS_BYTES = 256 << 10;
    static volatile long sink;

    static MemorySegment zlib(String name) {
        return ZLIB.find(name).orElseThrow();
    }

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

    /** qsort's comparator, called through the upcall stub. */
    static int compare(MemorySegment a, MemorySegment b) {
        return Integer.compare(key(a.get(JAVA_INT, 0)), key(b.get(JAVA_INT, 0)));
    }

    /** Fills `ints` with a fresh permutation and sorts it with libc's qsort. */
    static long sortOnce(MemorySegment ints, MemorySegment comparator, int round) throws Throwable {
        for (int i = 0; i < COUNT; i++) {
            ints.setAtIndex(JAVA_INT, i, (i * 7919 + round) % COUNT);
        }
        QSORT.invokeExact(ints, (long) COUNT, 4L, comparator);
        return ints.getAtIndex(JAVA_INT, 0);
    }

    static MemorySegment bytes(Arena arena, int n) {
        MemorySegment m = arena.allocate(n);
        long x = 0x2545f4914f6cdd1dL;
        for (int i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            // Compressible, but deflate has to search.
            m.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) ('a' + (x & 15)));
        }
        return m;
    }

    interface Step {
        long run() throws Throwable;
    }

    static Step step(String mode, Arena arena) throws Throwable {
        switch (mode) {
            case "ffm-crc32": {
                MemorySegment m = bytes(arena, BYTES);
                return () -> (long) CRC32.invokeExact(0L, m, BYTES);
            }
            case "ffm-critical": {
                MemorySegment m = bytes(arena, BYTES);
                return () -> (long) CRC32_CRITICAL.invokeExact(0L, m, BYTES);
            }
            case "ffm-compress": {
                MemorySegment src = bytes(arena, COMPRESS_BYTES);
                MemorySegment dst = arena.allocate(COMPRESS_BYTES * 2L);
                MemorySegment dstLen = arena.allocate(JAVA_LONG);
                return () -> {
                    dstLen.set(JAVA_LONG, 0, dst.byteSize());
                    int rc = (int) COMPRESS.invokeExact(dst, dstLen, src, (long) COMPRESS_BYTES);
                    if (rc != 0) {
                        throw new IllegalStateException("compress: " + rc);
                    }
                    return dstLen.get(JAVA_LONG, 0);
                };
            }
            case "ffm-qsort": {
                MethodHandle target = MethodHandles.lookup().findStatic(FfmCalls.class, "compare",
                        MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class));
                MemorySegment comparator = LINKER.upcallStub(target, COMPARE_TYPE, arena);
                MemorySegment ints = arena.allocate(JAVA_INT, COUNT);
                int[] round = {0};
                return () -> sortOnce(ints, comparator, round[0]++);
            }
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
        Throwable[] failed = new Throwable[1];
        for (int i = 0; i < modes.length; i++) {
            final int k = i;
            final String mode = modes[i];
            threads[i] = new Thread(() -> {
                try (Arena arena = Arena.ofConfined()) {
                    Step step = step(mode, arena);
                    while (mx.getCurrentThreadCpuTime() < ns) {
                        sink += step.run();
                    }
                } catch (Throwable t) {
                    failed[0] = t;
                }
                cpu[k] = mx.getCurrentThreadCpuTime();
            }, mode);
        }
        for (Thread t : threads) t.start();
        for (Thread t : threads) t.join();
        if (failed[0] != null) {
            throw new IllegalStateException(failed[0]);
        }
        for (int i = 0; i < modes.length; i++) {
            System.out.println("CPU " + threads[i].getName() + " " + cpu[i]);
        }
    }
}
