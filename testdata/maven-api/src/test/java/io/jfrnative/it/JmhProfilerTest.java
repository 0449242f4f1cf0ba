package io.jfrnative.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.profile.ProfilerFactory;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/** HashBench under {@code -prof io.jfrnative.jmh.JfrNativeProfiler}, as JMH's command line takes it. */
class JmhProfilerTest {
    @Test
    void listedByJmh() {
        ByteArrayOutputStream list = new ByteArrayOutputStream();
        ProfilerFactory.listProfilers(new PrintStream(list, true, StandardCharsets.UTF_8));
        String text = list.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("io.jfrnative.jmh.JfrNativeProfiler"), text);
    }

    @Test
    void profilesANativeBenchmark() throws Exception {
        Path dir = Files2.outDir("jmh");
        Path output = dir.resolve("jmh.txt");
        CommandLineOptions cli = new CommandLineOptions(
                "-f", "1", "-wi", "1", "-w", "1s", "-i", "2", "-r", "1s",
                "-prof", "io.jfrnative.jmh.JfrNativeProfiler:interval=1ms;dir=" + dir + ";top=3",
                "-o", output.toString(),
                HashBench.class.getName() + ".hash");
        Options options = new OptionsBuilder().parent(cli)
                .jvmArgsAppend("-Dworkload.library=" + System.getProperty("workload.library"))
                .build();
        Collection<RunResult> results = new Runner(options).run();
        assertEquals(1, results.size());

        String jmh = Files.readString(output);
        Result<?> secondary = results.iterator().next().getSecondaryResults().get("jfrnative");
        assertTrue(secondary != null, "no ·jfrnative result in " + results.iterator().next().getSecondaryResults().keySet());
        String text = secondary.extendedInfo();
        System.out.println(text);
        assertTrue(text.contains("jfrnative_jmh_hash"), text);
        assertTrue(text.contains("io.jfrnative.it.HashBench.hash") || text.contains("HashBench"), text);
        assertTrue(jmh.contains("jfrnative_jmh_hash"), "JMH's output does not name the native function:\n" + jmh);

        List<Path> files;
        try (Stream<Path> walk = Files.walk(dir)) {
            files = walk.filter(Files::isRegularFile).sorted().collect(Collectors.toList());
        }
        System.out.println(files);
        Path html = files.stream().filter(p -> p.getFileName().toString().equals("fork-1.html")).findFirst()
                .orElseThrow(() -> new AssertionError("no fork-1.html in " + dir));
        Path bench = html.getParent();
        for (String name : new String[] {"fork-1.jfr", "fork-1.symbolized.jfr", "fork-1.txt"}) {
            assertTrue(Files.size(bench.resolve(name)) > 0, name);
        }
        assertTrue(Files.readString(html).contains("jfrnative_jmh_hash"), html + " does not name jfrnative_jmh_hash");
    }
}
