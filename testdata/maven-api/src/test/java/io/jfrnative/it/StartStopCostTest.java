package io.jfrnative.it;

import io.jfrnative.JfrNative;
import io.jfrnative.it.examples.WithAsyncProfiler;
import io.jfrnative.it.examples.WithJfrNative;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import one.profiler.AsyncProfiler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The Java API beside async-profiler's (tools.profiler:async-profiler 4.5, whose jar carries its
 * library as ours does): the lines a user writes for one task (examples/), whether both
 * examples' files are readable, and what a start+stop pair costs (median of compare.runs pairs,
 * each into a new file, 10 ms, CPU samples as JFR). Figures only, into ${jfrnative.out}/compare.txt:
 * nothing is asserted on timings. Run by `tools/scripts/maven.sh compare`.
 */
@EnabledIfSystemProperty(named = "jfrnative.compare", matches = "compare")
class StartStopCostTest {
    @Test
    void compare() throws Exception {
        Path dir = Files2.outDir("compare");
        int runs = Integer.getInteger("compare.runs", 50);
        StringBuilder report = new StringBuilder("Java API comparison (tools/scripts/maven.sh compare)\n");

        Path src = Paths.get("src/test/java/io/jfrnative/it/examples");
        report.append(String.format(Locale.ROOT, "lines of user code for record + dump + stop: jfr-native %d, async-profiler %d%n",
                userLines(src.resolve("WithJfrNative.java")), userLines(src.resolve("WithAsyncProfiler.java"))));

        Runnable work = () -> Workload.spinFor(300);
        WithJfrNative.run(dir.resolve("ours.jfr"), dir.resolve("ours-half.jfr"), work);
        WithAsyncProfiler.run(dir.resolve("ap.jfr"), dir.resolve("ap-half.jfr"), work);
        for (String f : new String[] {"ours.jfr", "ours-half.jfr", "ap.jfr", "ap-half.jfr"}) {
            report.append(String.format("  %-14s %s%n", f, readable(dir.resolve(f))));
        }

        JfrNative ours = JfrNative.get();
        long[] oursNs = new long[runs];
        for (int i = 0; i < runs; i++) {
            Path f = dir.resolve("ours-" + i + ".jfr");
            long t0 = System.nanoTime();
            ours.start(f, Duration.ofMillis(10));
            ours.stop();
            oursNs[i] = System.nanoTime() - t0;
            Files.deleteIfExists(f);
        }
        AsyncProfiler ap = AsyncProfiler.getInstance();
        long[] apNs = new long[runs];
        for (int i = 0; i < runs; i++) {
            Path f = dir.resolve("ap-" + i + ".jfr");
            long t0 = System.nanoTime();
            ap.execute("start,event=cpu,interval=10ms,jfr,file=" + f);
            ap.execute("stop");
            apNs[i] = System.nanoTime() - t0;
            Files.deleteIfExists(f);
        }
        report.append(String.format(Locale.ROOT, "start+stop, median of %d (p10-p90), ms: jfr-native %s, async-profiler %s (%s)%n",
                runs, stats(oursNs), stats(apNs), ap.getVersion()));
        report.append("threads in this JVM: ").append(Thread.activeCount()).append('\n');
        Path out = dir.getParent().resolve("compare.txt");
        Files.writeString(out, report.toString());
        System.out.print(report);
    }

    private static int userLines(Path file) throws Exception {
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        int from = -1;
        int n = 0;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).trim();
            if (line.equals("// user code begins")) {
                from = i;
            } else if (line.equals("// user code ends")) {
                return n;
            } else if (from >= 0 && !line.isEmpty() && !line.equals("}")) {
                n++;
            }
        }
        throw new IllegalStateException("no markers in " + file);
    }

    private static String readable(Path file) {
        try {
            String summary = Files2.run(Files2.jdkTool("jfr"), "summary", file.toString());
            String samples = Arrays.stream(summary.split("\n"))
                    .filter(l -> l.contains("jdk.CPUTimeSample") || l.contains("jdk.ExecutionSample"))
                    .map(String::trim).findFirst().orElse("no CPU sample events");
            return "readable by jfr summary (" + samples.replaceAll("\\s+", " ") + ")";
        } catch (Throwable e) {
            return Files.exists(file) ? "NOT readable: " + e.getMessage().lines().reduce((a, b) -> b).orElse("") : "not written";
        }
    }

    private static String stats(long[] ns) {
        long[] s = ns.clone();
        Arrays.sort(s);
        return String.format(Locale.ROOT, "%.2f (%.2f-%.2f)", s[s.length / 2] / 1e6, s[s.length / 10] / 1e6,
                s[s.length * 9 / 10] / 1e6);
    }
}
