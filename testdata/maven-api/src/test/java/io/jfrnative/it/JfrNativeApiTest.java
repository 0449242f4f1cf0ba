package io.jfrnative.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.jfrnative.Bundled;
import io.jfrnative.JfrNative;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The Java API in this JVM, where no agent was loaded: {@link JfrNative#get()} unpacks the jar's
 * library. One agent per JVM, so each test leaves no recording running.
 */
class JfrNativeApiTest {
    @AfterEach
    void stopLeftover() {
        JfrNative agent = JfrNative.get();
        if (agent.isRunning()) {
            agent.stop();
        }
    }

    @Test
    void loadsTheJarsLibraryOnce() throws IOException {
        JfrNative agent = JfrNative.get();
        assertTrue(agent.version().startsWith("jfr-native 0.1.0"), agent.version());
        assertTrue(agent.libraryPath().contains("/jfrnative-"), agent.libraryPath());
        // Unpacked into a private directory and deleted after loading.
        assertFalse(Files.exists(Paths.get(agent.libraryPath())), agent.libraryPath());
        assertFalse(Files.exists(Paths.get(agent.libraryPath()).getParent()), agent.libraryPath());
        List<String> mapped = Files2.agentMappings();
        assertEquals(1, mapped.size(), mapped.toString());
        assertTrue(mapped.get(0).startsWith(agent.libraryPath()), mapped.toString());
        assertTrue(JfrNative.get() == agent);
    }

    /** The JNI workload recorded from start to stop: its native function above its Java caller. */
    @Test
    void recordsNativeFramesOfAJniCall() throws Exception {
        Path dir = Files2.outDir("junit/record");
        Path jfr = dir.resolve("spin.jfr");
        try (JfrNative.Recording r = JfrNative.record(jfr, Duration.ofMillis(1))) {
            assertEquals(jfr.toAbsolutePath(), r.file());
            assertEquals(Optional.of(jfr.toAbsolutePath()), JfrNative.get().file());
            Workload.spinFor(2000);
        }
        assertFalse(JfrNative.get().isRunning());
        assertEquals(Optional.empty(), JfrNative.get().file());

        Path collapsed = dir.resolve("spin.collapsed");
        Files2.run(Files2.symbolizer().toString(), "-q", jfr.toString(), "-o", collapsed.toString());
        long spin = 0;
        long underJava = 0;
        for (String line : Files.readAllLines(collapsed, StandardCharsets.UTF_8)) {
            int space = line.lastIndexOf(' ');
            String stack = line.substring(0, space);
            long weight = Long.parseLong(line.substring(space + 1));
            int leaf = stack.indexOf("jfrnative_api_spin");
            if (leaf < 0) {
                continue;
            }
            spin += weight;
            int caller = stack.indexOf("io.jfrnative.it.Workload.spin");
            if (caller >= 0 && caller < leaf && stack.contains("JfrNativeApiTest.recordsNativeFramesOfAJniCall")) {
                underJava += weight;
            }
        }
        System.out.printf("jfrnative_api_spin: %d, under Workload.spin: %d%n", spin, underJava);
        assertTrue(spin > 0, "no sample in jfrnative_api_spin: " + collapsed);
        assertTrue(underJava >= 0.9 * spin, "jfrnative_api_spin under its Java caller in " + underJava + " of " + spin);
    }

    @Test
    void dumpWritesAReadableCopyAndTheRecordingGoesOn() throws Exception {
        Path dir = Files2.outDir("junit/dump");
        JfrNative agent = JfrNative.get();
        agent.start(dir.resolve("live.jfr"), Duration.ofMillis(1));
        Workload.spinFor(500);
        Path copy = dir.resolve("so-far.jfr");
        agent.dump(copy);
        assertTrue(agent.isRunning());
        String summary = Files2.run(Files2.jdkTool("jfr"), "summary", copy.toString());
        // The summary lists every declared type, with 0 events too: the count must be > 0.
        assertTrue(Files2.eventCount(summary, "jdk.CPUTimeSample") > 0, summary);
        // A second dump to the same file: the file exists, the agent refuses.
        IllegalStateException again = assertThrows(IllegalStateException.class, () -> agent.dump(copy));
        System.out.println("dump to an existing file: " + again.getMessage());
        Workload.spinFor(200);
        agent.stop();
        assertFalse(agent.isRunning());
        String live = Files2.run(Files2.jdkTool("jfr"), "summary", dir.resolve("live.jfr").toString());
        assertTrue(Files2.eventCount(live, "jdk.CPUTimeSample") > Files2.eventCount(summary, "jdk.CPUTimeSample"),
                "the whole recording has more samples than the dump taken before its end:\n" + live);
        IllegalStateException notRunning = assertThrows(IllegalStateException.class,
                () -> agent.dump(dir.resolve("after-stop.jfr")));
        System.out.println("dump without a recording: " + notRunning.getMessage());
    }

    @Test
    void startingTwiceNamesTheRunningFile() throws IOException {
        Path dir = Files2.outDir("junit/twice");
        JfrNative agent = JfrNative.get();
        agent.start("file=" + dir.resolve("first.jfr") + ",interval=10ms");
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> agent.start(dir.resolve("second.jfr"), Duration.ofMillis(10)));
        System.out.println("second start: " + e.getMessage());
        assertTrue(e.getMessage().contains("first.jfr"), e.getMessage());
        assertEquals(Optional.of(dir.resolve("first.jfr")), agent.file());
        agent.stop();
        IllegalStateException stop = assertThrows(IllegalStateException.class, agent::stop);
        System.out.println("stop without a recording: " + stop.getMessage());
    }

    @Test
    void aBadOptionIsNamed() throws IOException {
        Path dir = Files2.outDir("junit/bad");
        JfrNative agent = JfrNative.get();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> agent.start("file=" + dir.resolve("bad.jfr") + ",interval=1h"));
        System.out.println("bad interval: " + e.getMessage());
        assertTrue(e.getMessage().contains("'interval'"), e.getMessage());
        IllegalStateException tiny = assertThrows(IllegalStateException.class,
                () -> agent.start(dir.resolve("bad.jfr"), Duration.ofNanos(50)));
        assertTrue(tiny.getMessage().contains("'interval'"), tiny.getMessage());
        IllegalStateException unknown = assertThrows(IllegalStateException.class,
                () -> agent.start("file=" + dir.resolve("bad.jfr") + ",color=blue"));
        assertTrue(unknown.getMessage().contains("'color'"), unknown.getMessage());
        assertFalse(agent.isRunning());
        assertThrows(IllegalArgumentException.class, () -> agent.start(dir.resolve("a,b.jfr"), Duration.ofMillis(10)));
        assertThrows(IllegalArgumentException.class, () -> agent.start("stop"));
    }

    /**
     * A JVM started with -agentpath: the API uses that agent (HotSpot links the native methods
     * to it) and unpacks no second copy: one libjfrnative mapping, and the API sees the
     * command line's recording.
     */
    @Test
    void usesTheAgentAlreadyInTheJvm() throws Exception {
        Path dir = Files2.outDir("junit/agentpath");
        Path lib = Bundled.unpack(Bundled.LIBRARY, true);
        Path jfr = dir.resolve("agentpath.jfr");
        List<String> command = new ArrayList<>();
        command.add(Files2.jdkTool("java"));
        command.add("-agentpath:" + lib + "=file=" + jfr + ",interval=1ms");
        command.add("-Dworkload.library=" + System.getProperty("workload.library"));
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(AgentPresentMain.class.getName());
        command.add(dir.toString());
        Process p = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(dir.resolve("jvm.txt").toFile()).start();
        assertTrue(p.waitFor(2, TimeUnit.MINUTES), "the -agentpath JVM did not exit");
        String out = Files.readString(dir.resolve("jvm.txt"));
        System.out.println(out);
        assertEquals(0, p.exitValue(), out);
        assertAgentPresentRun(out, lib, jfr, dir);
        assertNotEquals(0, Files.size(jfr));
    }

    /** The agent attached at run time (jcmd JVMTI.agent_load): found as the -agentpath: one. */
    @Test
    void usesAnAttachedAgent() throws Exception {
        Path dir = Files2.outDir("junit/attach");
        Path lib = Bundled.unpack(Bundled.LIBRARY, true);
        Path jfr = dir.resolve("attached.jfr");
        Path log = dir.resolve("jvm.txt");
        Process p = new ProcessBuilder(Files2.jdkTool("java"),
                "-Dworkload.library=" + System.getProperty("workload.library"),
                "-cp", System.getProperty("java.class.path"),
                AgentPresentMain.class.getName(), dir.toString(), "wait")
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
            while (!Files.readString(log).contains("ready\n")) {
                assertTrue(p.isAlive() && System.nanoTime() < deadline, Files.readString(log));
                Thread.sleep(50);
            }
            String jcmd = Files2.run(Files2.jdkTool("jcmd"), Long.toString(p.pid()), "JVMTI.agent_load",
                    lib.toString(), "\"file=" + jfr + ",interval=1ms\"");
            assertTrue(jcmd.contains("return code: 0"), jcmd);
            p.getOutputStream().write('\n');
            p.getOutputStream().close();
            assertTrue(p.waitFor(2, TimeUnit.MINUTES), "the attached JVM did not exit");
        } finally {
            p.destroyForcibly();
        }
        String out = Files.readString(log);
        System.out.println(out);
        assertEquals(0, p.exitValue(), out);
        assertAgentPresentRun(out, lib, jfr, dir);
    }

    /**
     * What {@link AgentPresentMain} printed and left, in a JVM that had the agent {@code lib}
     * recording to {@code jfr}: the API used that agent (one mapping, its file), stopped it, and
     * both the recording and the dump in {@code dir} hold samples (300 ms of spinning before the
     * dump), not only the declared type.
     */
    private static void assertAgentPresentRun(String out, Path lib, Path jfr, Path dir) throws Exception {
        assertTrue(out.contains("origin=agent already loaded\n"), out);
        assertTrue(out.contains("mappings=[" + lib + "]\n"), out);
        assertTrue(out.contains("file=" + jfr + "\n"), out);
        assertTrue(out.contains("running after stop=false\n"), out);
        String whole = Files2.run(Files2.jdkTool("jfr"), "summary", jfr.toString());
        String dumped = Files2.run(Files2.jdkTool("jfr"), "summary", dir.resolve("dump.jfr").toString());
        assertTrue(Files2.eventCount(whole, "jdk.CPUTimeSample") > 0, whole);
        assertTrue(Files2.eventCount(dumped, "jdk.CPUTimeSample") > 0, dumped);
    }
}
