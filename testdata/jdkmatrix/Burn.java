/**
 * A CPU-bound main thread for SECONDS of wall time: rounds of math intrinsics (Math.sin, Math.log,
 * Math.pow: C2 and C1 call HotSpot's stub routines for them, the interpreter its own math entries)
 * and of System.arraycopy on int arrays (the arraycopy stubs), each below two frames of its own
 * under main, so that the innermost Java method of a sample says which part it was in.
 *
 * <p>Usage: {@code java -cp DIR Burn SECONDS}. Prints "sum <n>".
 */
public class Burn {
    static final int N = 4096;
    static volatile double sink;

    /** Math intrinsics over `xs`. */
    static double math(double[] xs) {
        double s = 0;
        for (int i = 0; i < xs.length; i++) {
            double x = xs[i];
            s += Math.sin(x) + Math.log(x + 1.0) + Math.pow(x, 1.1);
        }
        return s;
    }

    /** Copies between `a` and `b` at shifting offsets and lengths. */
    static long copy(int[] a, int[] b, int round) {
        long s = 0;
        for (int k = 0; k < 64; k++) {
            int off = (round + k * 31) & 1023;
            int len = N - 1024 - (k & 255);
            System.arraycopy(a, off, b, 1024 - off, len);
            System.arraycopy(b, k & 511, a, (k * 7) & 511, len);
            s += b[k] + a[len - 1];
        }
        return s;
    }

    static double mathRound(double[] xs, int round) {
        xs[round & (N - 1)] = (round & 1023) * 0.001;
        return math(xs);
    }

    static long copyRound(int[] a, int[] b, int round) {
        a[round & (N - 1)] = round;
        return copy(a, b, round);
    }

    public static void main(String[] args) {
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        double[] xs = new double[N];
        int[] a = new int[N];
        int[] b = new int[N];
        for (int i = 0; i < N; i++) {
            xs[i] = i * 0.37;
            a[i] = i * 17;
        }
        long sum = 0;
        int round = 0;
        while (System.nanoTime() < end) {
            sink += mathRound(xs, round);
            sum += copyRound(a, b, round);
            round++;
        }
        System.out.println("sum " + (sum + (long) sink));
    }
}
