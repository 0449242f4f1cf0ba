/**
 * Math intrinsics called from interpreted code (run with -Xint): the interpreter's math entry
 * calls the JVM's libm stub (StubRoutines::libmSin, ...) with the interpreted caller's frame
 * pointer still in rbp, so a walk from the stub sees two interpreter return addresses above
 * it. Usage: InterpretedMath SECONDS.
 */
public class InterpretedMath {
    static volatile double sink;

    public static void main(String[] args) {
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        double s = 0;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++) {
                s += Math.sin(s + i) + Math.log(i + 1.0) + Math.exp(-s) + Math.pow(s, 0.5);
            }
        }
        sink = s;
    }
}
