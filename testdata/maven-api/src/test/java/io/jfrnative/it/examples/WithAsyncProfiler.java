package io.jfrnative.it.examples;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import one.profiler.AsyncProfiler;

/** The comparison's task (see WithJfrNative) with async-profiler 4.5's Java API. */
public final class WithAsyncProfiler {
    private WithAsyncProfiler() {}

    public static void run(Path file, Path halfWay, Runnable work) throws IOException {
        // user code begins
        AsyncProfiler profiler = AsyncProfiler.getInstance();
        profiler.execute("start,event=cpu,interval=10ms,jfr,file=" + file);
        try {
            work.run();
            profiler.execute("dump,jfr"); // JFR output: flushes into `file`, ignores file=
            Files.copy(file, halfWay);
            work.run();
        } finally {
            profiler.execute("stop");
        }
        // user code ends
    }
}
