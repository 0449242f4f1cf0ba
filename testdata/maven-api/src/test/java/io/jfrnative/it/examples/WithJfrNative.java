package io.jfrnative.it.examples;

import io.jfrnative.JfrNative;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The comparison's task with this API: record a piece of work into a JFR file at 10 ms, dump
 * what was recorded half-way into a second file, stop. StartStopCostTest counts the lines
 * between the markers and runs both examples.
 */
public final class WithJfrNative {
    private WithJfrNative() {}

    public static void run(Path file, Path halfWay, Runnable work) {
        // user code begins
        try (JfrNative.Recording recording = JfrNative.record(file, Duration.ofMillis(10))) {
            work.run();
            recording.dump(halfWay);
            work.run();
        }
        // user code ends
    }
}
