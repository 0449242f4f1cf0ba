package io.jfrnative.it;

import io.jfrnative.JfrNative;
import java.nio.file.Paths;

/**
 * Run by JfrNativeApiTest in a JVM that has the agent already: started with -agentpath:, or
 * (with a second argument {@code wait}) attached by jcmd while this waits for a line on stdin.
 */
public final class AgentPresentMain {
    private AgentPresentMain() {}

    public static void main(String[] args) throws Exception {
        if (args.length > 1 && args[1].equals("wait")) {
            System.out.println("ready");
            System.out.flush();
            new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
        }
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
