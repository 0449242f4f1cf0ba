package io.jfrnative.it;

import io.jfrnative.Bundled;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** What the tests share: the output directory, the jar's jfr-symbolize, running a command. */
final class Files2 {
    private static Path symbolizer;

    private Files2() {}

    /** A fresh directory for one test under ${jfrnative.out}. */
    static Path outDir(String name) throws IOException {
        Path dir = Paths.get(System.getProperty("jfrnative.out", "target/maven-api")).toAbsolutePath().normalize().resolve(name);
        if (Files.exists(dir)) {
            try (var walk = Files.walk(dir)) {
                walk.sorted((a, b) -> b.compareTo(a)).forEach(p -> p.toFile().delete());
            }
        }
        return Files.createDirectories(dir);
    }

    /** The jfr-symbolize the jar carries, unpacked once. */
    static synchronized Path symbolizer() {
        if (symbolizer == null) {
            symbolizer = Bundled.unpack(Bundled.SYMBOLIZER, true);
        }
        return symbolizer;
    }

    /** The output of a command that must exit 0 (stderr merged). */
    static String run(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(5, TimeUnit.MINUTES) || p.exitValue() != 0) {
            throw new AssertionError(Arrays.toString(command) + " failed:\n" + out);
        }
        return out;
    }

    /** The count of events of {@code type} in the output of {@code jfr summary} (-1 if absent). */
    static long eventCount(String summary, String type) {
        for (String line : summary.split("\n")) {
            String[] fields = line.trim().split("\\s+");
            if (fields.length >= 2 && fields[0].equals(type)) {
                return Long.parseLong(fields[1]);
            }
        }
        return -1;
    }

    /** The JDK's own tool next to this JVM (jfr). */
    static String jdkTool(String name) {
        return Paths.get(System.getProperty("java.home"), "bin", name).toString();
    }

    /** The distinct paths of this process's mappings of libjfrnative.so. */
    static List<String> agentMappings() throws IOException {
        List<String> paths = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get("/proc/self/maps"))) {
            int at = line.indexOf('/');
            if (at >= 0 && line.contains("libjfrnative")) {
                String path = line.substring(at);
                if (!paths.contains(path)) {
                    paths.add(path);
                }
            }
        }
        return paths;
    }
}
