/**
 * A compiled caller above a leaf stub: {@code StringBuilder.delete(0, 5)} on a 1 MB builder moves
 * the array down in the arraycopy stub, which C2 calls as a leaf (no debug information at the
 * return address). The program of async-profiler's own test for this case
 * ({@code test/test/recovery/StringBuilderTest.java}): a profiler should show
 * {@code StringBuilder.delete} inlined into {@code main} above the stub.
 *
 * <p>Usage: {@code StringBuilderDelete SECONDS}.
 */
public class StringBuilderDelete {
    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 4;
        StringBuilder sb = new StringBuilder();
        sb.append(new char[1_000_000]);
        long end = System.nanoTime() + (long) (seconds * 1e9);
        do {
            sb.append(12345);
            sb.delete(0, 5);
        } while (System.nanoTime() < end);
        System.out.println("done " + sb.length());
    }
}
