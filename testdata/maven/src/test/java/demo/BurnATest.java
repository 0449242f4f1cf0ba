package demo;

import org.junit.Test;

/** Burns about one CPU-second under a method named after this class, in its own forked JVM. */
public class BurnATest {
    static void mavenBurnA() {
        Spin.oneSecond();
    }

    @Test
    public void burn() {
        mavenBurnA();
    }
}
