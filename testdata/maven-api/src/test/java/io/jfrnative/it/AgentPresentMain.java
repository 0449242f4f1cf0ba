package io.jfrnative.it;

import io.jfrnative.JfrNative;
import java.nio.file.Paths;

/** Run by JfrNativeApiTest.usesTheAgentAlreadyInTheJvm in a JVM started with -agentpath:. */
public final class AgentPresentMain {
    private AgentPresentMain() {}

    public static void main(String[] args) throws Exception {
        JfrNative agent = JfrNative.get();
        System.out.println("origin=" + agent.libraryPath());
        System.out.println("version=" + agent.version());
        System.out.println("mappings=" + Files2.agentMappings());
        System.out.println("running=" + agent.isRunning());
        System.out.println("file=" + agent.file().map(Object::toString).orElse("none"));
        Workload.spinFor(300);
        agent.dump(Paths.get(args[0], "dump.jfr"));
        agent.stop();
        System.out.println("running after stop=" + agent.isRunning());
    }
}
