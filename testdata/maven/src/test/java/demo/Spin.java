package demo;

/** The tests' busy loop: about one second of arithmetic. */
final class Spin {
    static volatile long sink;

    private Spin() {}

    static void oneSecond() {
        long x = 1;
        long end = System.nanoTime() + 1_000_000_000L;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 100_000; i++) {
                x = x * 6364136223846793005L + 1;
            }
        }
        sink = x;
    }
}
