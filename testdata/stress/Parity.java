/**
 * Small programs whose observable behaviour must be the same with the agent as without it (the
 * parity test runs each mode both ways and compares exit code, stdout and the uncaught
 * exception's line on stderr). Every mode first burns a little CPU in Java and through JNI, so
 * that the agent has threads to sample.
 *
 * <p>Usage: {@code java -Djava.library.path=DIR -cp DIR Parity MODE}, MODE one of:
 *
 * <ul>
 *   <li>ok: prints a result, exits 0;
 *   <li>exit3: System.exit(3);
 *   <li>throw: an uncaught exception in main (exit code 1);
 *   <li>hook: a shutdown hook that prints, then System.exit(4);
 *   <li>halt: Runtime.halt(7) (shutdown hooks do not run);
 *   <li>soe-java: 100 StackOverflowErrors of deep Java recursion, caught, then normal work;
 *   <li>soe-jni: 100 StackOverflowErrors of Java -> native -> Java recursion, caught;
 *   <li>soe-uncaught: a StackOverflowError nobody catches (exit code 1);
 *   <li>sleep: prints READY and sleeps until killed (the test sends SIGTERM; a shutdown hook
 *       prints).
 * </ul>
 */
public class Parity {
    static volatile long sink;
    static int deepest;

    static long down(int depth, long a, long b) {
        if (depth > deepest) deepest = depth;
        return down(depth + 1, b, a + b) + a;
    }

    /** A recursion that ends: the sum 0 + 1 + ... + n, n frames deep. */
    static long sum(int n) {
        return n == 0 ? 0 : n + sum(n - 1);
    }

    static void warmUp() {
        long h = 1;
        long end = System.nanoTime() + 200_000_000L;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 100_000; i++) h = h * 6364136223846793005L + i;
        }
        sink += h + Jni.overflow().getStackTrace().length;
    }

    static void printOnShutdown() {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> System.out.println("hook ran")));
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) throw new IllegalArgumentException("usage: Parity MODE");
        warmUp();
        switch (args[0]) {
            case "ok":
                System.out.println("sum(1000) = " + sum(1000));
                break;
            case "exit3":
                System.out.println("exiting with 3");
                System.exit(3);
                break;
            case "throw":
                System.out.println("throwing");
                throw new IllegalStateException("parity: uncaught");
            case "hook":
                printOnShutdown();
                System.out.println("exiting with 4");
                System.exit(4);
                break;
            case "halt":
                printOnShutdown();
                System.out.println("halting with 7");
                System.out.flush();
                Runtime.getRuntime().halt(7);
                break;
            case "soe-java": {
                int caught = 0;
                for (int i = 0; i < 100; i++) {
                    deepest = 0;
                    try {
                        sink += down(0, 1, 1);
                    } catch (StackOverflowError e) {
                        if (deepest > 1000) caught++;
                    }
                }
                String deep = " StackOverflowErrors in Java, each deeper than 1000 frames";
                System.out.println("caught " + caught + deep);
                System.out.println("then sum(1000) = " + sum(1000));
                break;
            }
            case "soe-jni": {
                int caught = 0;
                for (int i = 0; i < 100; i++) {
                    sink += Jni.overflow().getStackTrace().length;
                    caught++;
                }
                System.out.println("caught " + caught + " StackOverflowErrors through JNI");
                System.out.println("then sum(1000) = " + sum(1000));
                break;
            }
            case "soe-uncaught":
                System.out.println("overflowing");
                sink += down(0, 1, 1);
                break;
            case "sleep":
                printOnShutdown();
                System.out.println("READY");
                System.out.flush();
                Thread.sleep(600_000);
                System.out.println("not killed");
                break;
            default:
                throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }
}
