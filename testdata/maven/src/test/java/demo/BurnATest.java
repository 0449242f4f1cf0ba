package demo;

import org.junit.Test;

/** Burns about one CPU-second in a method named after this class, in its own forked JVM. */
public class BurnATest {
    static volatile long sink;

    static void mavenBurnA() {
        long x = 1;
        long end = System.nanoTime() + 1_000_000_000L;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 100_000; i++) {
                x = x * 6364136223846793005L + 1;
            }
        }
        sink = x;
    }

    @Test
    public void burn() {
        mavenBurnA();
    }
}
