package io.jfrnative.jmh;

import io.jfrnative.Bundled;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.profile.ExternalProfiler;
import org.openjdk.jmh.profile.ProfilerException;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.BenchmarkResultMetaData;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.TextResult;

/**
 * A JMH profiler that records each benchmark fork with the jfr-native agent and symbolizes it:
 * CPU samples with native frames (JNI libraries, libc, the JVM itself) above the Java frames.
 *
 * <pre>
 * java -jar benchmarks.jar -prof io.jfrnative.jmh.JfrNativeProfiler
 * java -jar benchmarks.jar -prof "io.jfrnative.jmh.JfrNativeProfiler:interval=1ms;dir=target/jfrnative"
 * </pre>
 *
 * <p>Options, {@code ;}-separated after the class name ({@code -prof NAME:help} lists them):
 * {@code interval} (sampling interval of a thread's CPU time, 100us to 10s; default 10ms),
 * {@code dir} (where to write; default the working directory), {@code threads} ({@code java} or
 * {@code all}), {@code top} (rows of each table in JMH's output; default 5), {@code warmup} ({@code
 * true}: the flame graph and report count the warmup iterations too), {@code agent} (more
 * agent options, comma-separated, e.g. {@code agent=cstack=fp,engine=timer}) and {@code
 * symbolizer} (the {@code jfr-symbolize} to run).
 *
 * <p>Per benchmark, in {@code DIR/<benchmark id>/}, each fork leaves {@code fork-N.jfr} (the
 * agent's recording), {@code fork-N.symbolized.jfr} (native frames named, for JDK Mission
 * Control and {@code jfr print}), {@code fork-N.html} (the flame graph) and {@code fork-N.txt}
 * (the full report); JMH prints the top native functions and Java methods by self CPU time as
 * the benchmark's secondary result {@code ·jfrnative}.
 *
 * <p>The agent and {@code jfr-symbolize} come from this jar (unpacked once per JMH run into a
 * private temporary directory, deleted when JMH exits), unless the system properties {@code
 * jfrnative.library} and {@code jfrnative.symbolizer} of JMH's JVM name files; the symbolizer
 * is last looked for on the {@code PATH}.
 */
public final class JfrNativeProfiler implements ExternalProfiler {
    private static final Map<String, String> OPTIONS = new LinkedHashMap<>();

    static {
        OPTIONS.put("interval", "CPU time between two samples of a thread, 100us to 10s (default 10ms)");
        OPTIONS.put("dir", "output directory; one subdirectory per benchmark (default: the working directory)");
        OPTIONS.put("threads", "java (the Java threads, default) or all (also the JVM's and native threads)");
        OPTIONS.put("top", "rows of each table in JMH's output (default 5)");
        OPTIONS.put("agent", "more agent options, comma-separated (docs/agent.md), e.g. agent=cstack=fp,engine=timer");
        OPTIONS.put("warmup", "true: the flame graph and the report count the warmup iterations too (default false: the measurement only)");
        OPTIONS.put("symbolizer", "the jfr-symbolize to run (default: the one in this jar, else PATH's)");
        OPTIONS.put("help", "this list");
    }

    private final String interval;
    private final Path dir;
    private final String threads;
    private final int top;
    private final String agentOptions;
    private final String symbolizerOption;
    private final boolean warmup;

    private final Map<String, Integer> forks = new HashMap<>();
    private Path library;
    private String symbolizer;
    private Path current;

    /**
     * @param initLine the options after {@code -prof NAME:}
     * @throws ProfilerException on an unknown or bad option, or {@code help}
     */
    public JfrNativeProfiler(String initLine) throws ProfilerException {
        Map<String, String> given = parse(initLine);
        interval = given.getOrDefault("interval", "10ms");
        dir = Paths.get(given.getOrDefault("dir", System.getProperty("user.dir"))).toAbsolutePath();
        if (dir.toString().indexOf(',') >= 0 || dir.toString().indexOf('%') >= 0) {
            // The recording's path goes into the agent's options: ',' separates them, and the
            // agent expands %p and %t.
            throw new ProfilerException("jfrnative: dir=" + dir + ": a directory with ',' or '%' cannot be given to the agent");
        }
        threads = given.getOrDefault("threads", "java");
        agentOptions = given.getOrDefault("agent", "");
        symbolizerOption = given.get("symbolizer");
        warmup = Boolean.parseBoolean(given.getOrDefault("warmup", "false"));
        try {
            top = Integer.parseInt(given.getOrDefault("top", "5"));
        } catch (NumberFormatException e) {
            throw new ProfilerException("jfrnative: top=" + given.get("top") + " is not a number");
        }
        if (!threads.equals("java") && !threads.equals("all")) {
            throw new ProfilerException("jfrnative: threads=" + threads + " is not java or all");
        }
        // The agent checks the interval and the other options itself, with messages naming the
        // option, when the fork starts; a bad one fails the fork with that message.
        if (interval.indexOf(',') >= 0) {
            throw new ProfilerException("jfrnative: interval=" + interval + " holds a comma");
        }
    }

    /** With JMH's default options (for {@code -lprof} and the no-argument case). */
    public JfrNativeProfiler() throws ProfilerException {
        this("");
    }

    private static Map<String, String> parse(String initLine) throws ProfilerException {
        Map<String, String> given = new HashMap<>();
        for (String item : initLine.split(";")) {
            if (item.isEmpty()) {
                continue;
            }
            int eq = item.indexOf('=');
            String key = eq < 0 ? item : item.substring(0, eq);
            if (!OPTIONS.containsKey(key) || key.equals("help") || eq < 0) {
                StringBuilder help = new StringBuilder();
                if (!key.equals("help")) {
                    help.append(eq < 0 ? "jfrnative: expected key=value, got '" + item + "'"
                            : "jfrnative: unknown option '" + key + "'").append('\n');
                }
                help.append("Options of io.jfrnative.jmh.JfrNativeProfiler (-prof io.jfrnative.jmh.JfrNativeProfiler:key=value;key=value):\n");
                OPTIONS.forEach((k, v) -> help.append(String.format("  %-11s %s%n", k, v)));
                throw new ProfilerException(help.toString());
            }
            given.put(key, item.substring(eq + 1));
        }
        return given;
    }

    @Override
    public Collection<String> addJVMInvokeOptions(BenchmarkParams params) {
        return Collections.emptyList();
    }

    @Override
    public Collection<String> addJVMOptions(BenchmarkParams params) {
        // JMH asks once per fork, before the fork starts, then calls beforeTrial and, when the
        // fork ends, afterTrial: one fork at a time.
        Path benchmarkDir = dir.resolve(directoryName(params.id()));
        int fork = forks.merge(params.id(), 1, Integer::sum);
        current = benchmarkDir.resolve("fork-" + fork + ".jfr");
        try {
            Files.createDirectories(benchmarkDir);
            for (String suffix : new String[] {".jfr", ".symbolized.jfr", ".html", ".txt"}) {
                Files.deleteIfExists(benchmarkDir.resolve("fork-" + fork + suffix));
            }
            deleteTree(benchmarkDir.resolve("fork-" + fork + ".jfr.libs"));
        } catch (IOException e) {
            throw new IllegalStateException("jfrnative: cannot prepare " + benchmarkDir + ": " + e, e);
        }
        StringBuilder agent = new StringBuilder("-agentpath:").append(library()).append('=')
                .append("file=").append(current)
                .append(",interval=").append(interval)
                .append(",threads=").append(threads);
        if (!agentOptions.isEmpty()) {
            agent.append(',').append(agentOptions);
        }
        return Collections.singletonList(agent.toString());
    }

    @Override
    public void beforeTrial(BenchmarkParams benchmarkParams) {
        // The recording starts with the fork's JVM.
    }

    @Override
    public Collection<? extends Result<?>> afterTrial(BenchmarkResult br, long pid, File stdOut, File stdErr) {
        Path recording = current;
        String text;
        try {
            text = symbolize(recording, warmup ? 0 : measurementDelayMs(br));
        } catch (IOException | RuntimeException e) {
            text = "jfr-native: " + recording + " not symbolized: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            text = "jfr-native: " + recording + " not symbolized: interrupted";
        }
        return Collections.singletonList(new TextResult(text, "jfrnative"));
    }

    @Override
    public boolean allowPrintOut() {
        return true;
    }

    @Override
    public boolean allowPrintErr() {
        return true;
    }

    @Override
    public String getDescription() {
        return "jfr-native: CPU samples with native and Java frames per fork; a flame graph, report and symbolized JFR per benchmark";
    }

    /**
     * Milliseconds from the fork's start to its first measurement iteration (JMH's metadata), which
     * the recording's start follows closely: the agent starts with the fork's JVM.
     */
    private static long measurementDelayMs(BenchmarkResult br) {
        BenchmarkResultMetaData md = br.getMetadata();
        return md == null ? 0 : Math.max(0, md.getMeasurementTime() - md.getStartTime());
    }

    /**
     * Runs jfr-symbolize three times: the symbolized JFR (all of the recording), the flame graph
     * and the report (from {@code fromMs} on); returns the summary for JMH's output.
     */
    private String symbolize(Path recording, long fromMs) throws IOException, InterruptedException {
        if (!Files.isRegularFile(recording)) {
            return "jfr-native: the fork left no recording " + recording + " (see its stderr)";
        }
        String base = recording.toString().substring(0, recording.toString().length() - ".jfr".length());
        String symbolizer = symbolizer();
        Path report = Paths.get(base + ".txt");
        run(symbolizer, "-q", recording.toString(), "-o", base + ".symbolized.jfr");
        String from = String.format(Locale.ROOT, "%.3f", fromMs / 1000.0);
        run(symbolizer, "-q", "--from", from, recording.toString(), "-o", base + ".html");
        run(symbolizer, "-q", "--from", from, "--top", "50", recording.toString(), "-o", report.toString());
        String scope = fromMs == 0 ? "" : " (from " + from + " s: the measurement iterations)";
        return summary(Files.readAllLines(report, StandardCharsets.UTF_8), scope, base + ".html");
    }

    private static void run(String... command) throws IOException, InterruptedException {
        // The output goes to a file, not a pipe read before waiting: a hung command then ends
        // at the timeout instead of blocking the read forever.
        Path log = Files.createTempFile("jfrnative-symbolize-", ".log");
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(log.toFile()).start();
            if (!p.waitFor(10, TimeUnit.MINUTES)) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", command) + ": still running after 10 minutes");
            }
            if (p.exitValue() != 0) {
                throw new IOException(String.join(" ", command) + " exited " + p.exitValue() + ": "
                        + new String(Files.readAllBytes(log), StandardCharsets.UTF_8).trim());
            }
        } finally {
            Files.deleteIfExists(log);
        }
    }

    /** The report's sample count and its two top tables, {@code top} rows each. */
    String summary(List<String> report, String scope, String flameGraph) {
        StringBuilder s = new StringBuilder();
        for (String line : report) {
            if (line.startsWith("CPU samples:")) {
                s.append("jfr-native ").append(line).append(scope).append('\n');
                break;
            }
        }
        table(s, report, "Top native functions by self CPU time:", "native functions (self CPU)");
        table(s, report, "Top Java methods by self CPU time:", "Java methods (self CPU)");
        s.append("flame graph: ").append(flameGraph);
        return s.toString();
    }

    private void table(StringBuilder s, List<String> report, String header, String title) {
        int at = report.indexOf(header);
        s.append(title).append(":\n");
        if (at < 0) {
            s.append("  (none)\n");
            return;
        }
        // Rows: "  34.49%   34.49%      0.814  function [library] (source)" after a column header.
        int rows = 0;
        for (int i = at + 2; i < report.size() && rows < top; i++) {
            String row = report.get(i).trim();
            if (row.isEmpty()) {
                break;
            }
            String[] cols = row.split("\\s+", 4);
            if (cols.length < 4) {
                break;
            }
            s.append(String.format(Locale.ROOT, "  %7s  %s%n", cols[0], cols[3]));
            rows++;
        }
        if (rows == 0) {
            s.append("  (none)\n");
        }
    }

    /** A directory name from a benchmark's id: its parameters are in it, with characters a path should not have. */
    static String directoryName(String id) {
        StringBuilder name = new StringBuilder();
        for (char c : id.toCharArray()) {
            name.append(Character.isLetterOrDigit(c) || c == '.' || c == '-' || c == '_' ? c : '_');
        }
        return name.toString();
    }

    private synchronized String library() {
        if (library == null) {
            String given = System.getProperty("jfrnative.library");
            library = given != null && !given.isEmpty()
                    ? Paths.get(given).toAbsolutePath()
                    : Bundled.unpack(Bundled.LIBRARY, true);
        }
        return library.toString();
    }

    private synchronized String symbolizer() {
        if (symbolizer == null) {
            symbolizer = findSymbolizer();
        }
        return symbolizer;
    }

    private String findSymbolizer() {
        String given = symbolizerOption != null ? symbolizerOption : System.getProperty("jfrnative.symbolizer");
        if (given != null && !given.isEmpty()) {
            return given;
        }
        if (Bundled.has(Bundled.SYMBOLIZER)) {
            return Bundled.unpack(Bundled.SYMBOLIZER, true).toString();
        }
        return Bundled.SYMBOLIZER;
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        List<Path> paths = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(root)) {
            walk.forEach(paths::add);
        }
        paths.sort(Comparator.reverseOrder());
        for (Path p : paths) {
            Files.delete(p);
        }
    }
}
