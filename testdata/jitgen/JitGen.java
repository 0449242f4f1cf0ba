import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Keeps generating and JIT-compiling new code: one thread ("jit-gen") defines a new class in a
 * new class loader every round, with a method {@code static long f(long x) { return x * K + C; }}
 * (bytecode written here, no library), and calls it in a hot loop until C1 and C2 compile it,
 * then drops it. The code cache keeps growing and shrinking under it. Pure Java: no JNI.
 * Prints "ROUNDS n", "CPU jit-gen ns" and "HUGE_CODE n" (executable mappings on hugetlbfs pages,
 * as a code cache under -XX:+UseLargePages is) at the end.
 *
 * <p>Usage: java JitGen SECONDS
 */
public class JitGen {
    static volatile long sink;

    /** The class file of {@code public class NAME { public static long f(long x) { return x * k + c; } }}. */
    static byte[] classFile(String name, long k, long c) {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        java.io.DataOutputStream out = new java.io.DataOutputStream(bytes);
        try {
            out.writeInt(0xCAFEBABE);
            out.writeShort(0);
            out.writeShort(61); // Java 17
            out.writeShort(12); // constant pool count (entries 1..11; longs take two)
            out.writeByte(1); out.writeUTF(name);                // #1
            out.writeByte(7); out.writeShort(1);                 // #2 class NAME
            out.writeByte(1); out.writeUTF("java/lang/Object");  // #3
            out.writeByte(7); out.writeShort(3);                 // #4 class Object
            out.writeByte(1); out.writeUTF("f");                 // #5
            out.writeByte(1); out.writeUTF("(J)J");              // #6
            out.writeByte(1); out.writeUTF("Code");              // #7
            out.writeByte(5); out.writeLong(k);                  // #8, #9
            out.writeByte(5); out.writeLong(c);                  // #10, #11
            out.writeShort(0x0021); // public super
            out.writeShort(2);
            out.writeShort(4);
            out.writeShort(0); // interfaces
            out.writeShort(0); // fields
            out.writeShort(1); // methods
            out.writeShort(0x0009); // public static
            out.writeShort(5);
            out.writeShort(6);
            out.writeShort(1); // attributes: Code
            byte[] code = {0x14, 0, 8, 0x1e, 0x69, 0x14, 0, 10, 0x61, (byte) 0xad};
            out.writeShort(7);
            out.writeInt(12 + code.length);
            out.writeShort(4); // max stack
            out.writeShort(2); // max locals
            out.writeInt(code.length);
            out.write(code);
            out.writeShort(0); // exception table
            out.writeShort(0); // code attributes
            out.writeShort(0); // class attributes
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
        return bytes.toByteArray();
    }

    static final class Loader extends ClassLoader {
        Class<?> define(String name, byte[] b) {
            return defineClass(name, b, 0, b.length);
        }
    }

    public static void main(String[] args) throws Throwable {
        double seconds = Double.parseDouble(args[0]);
        long[] rounds = new long[1];
        long[] cpu = new long[1];
        Thread t = new Thread(() -> {
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            long end = System.nanoTime() + (long) (seconds * 1e9);
            long x = 1;
            try {
                while (System.nanoTime() < end) {
                    long n = rounds[0]++;
                    String name = "Gen" + n;
                    Class<?> c = new Loader().define(name, classFile(name, 6364136223846793005L + n, n));
                    MethodHandle f = MethodHandles.lookup().findStatic(c, "f", MethodType.methodType(long.class, long.class));
                    for (int i = 0; i < 60_000; i++) {
                        x = (long) f.invokeExact(x);
                    }
                }
            } catch (Throwable e) {
                throw new RuntimeException(e);
            }
            sink = x;
            cpu[0] = mx.getCurrentThreadCpuTime();
        }, "jit-gen");
        t.start();
        t.join();
        System.out.println("ROUNDS " + rounds[0]);
        System.out.println("CPU jit-gen " + cpu[0]);
        long huge = java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/maps")).stream()
                .filter(l -> l.contains("hugepage") && l.split("\\s+")[1].contains("x"))
                .count();
        System.out.println("HUGE_CODE " + huge);
    }
}
