import java.io.File;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

import org.openjdk.jmc.common.IMCThread;
import org.openjdk.jmc.common.item.IItem;
import org.openjdk.jmc.common.item.IItemCollection;
import org.openjdk.jmc.common.item.IItemIterable;
import org.openjdk.jmc.common.item.IMemberAccessor;
import org.openjdk.jmc.common.item.IType;
import org.openjdk.jmc.common.unit.IQuantity;
import org.openjdk.jmc.common.unit.UnitLookup;
import org.openjdk.jmc.flightrecorder.IParserStats;
import org.openjdk.jmc.flightrecorder.JfrAttributes;
import org.openjdk.jmc.flightrecorder.JfrLoaderToolkit;

/**
 * Reads a JFR file with JDK Mission Control's parser (its public API) and prints what JMC makes
 * of a recording that holds the JDK's own events and jfr-native's samples:
 * <ul>
 * <li>{@code TYPE<tab>id<tab>n}: every event type JMC has, with its event count (a type JMC split
 * across chunks shows up twice, the second with a random suffix);
 * <li>{@code LANE<tab>name<tab>javaThreadId<tab>type=n,type=n...}: every thread as JMC tells
 * threads apart (its thread lanes), with the events whose {@code eventThread} it is, by type;
 * <li>{@code RANGE<tab>type<tab>firstNs<tab>lastNs}: the first and last event time of each type,
 * ns since the epoch;
 * <li>{@code CHUNKS n}, {@code SKIPPED n}: the parser's own counts;
 * <li>with {@code --near TYPE}: for each event of that type (a GC pause: {@code
 * jdk.GarbageCollection}), {@code NEAR<tab>startNs<tab>durationNs<tab>name}, then the CPU-time
 * samples JMC has from that event's start to its end, by thread and top frame (the leaf as JMC
 * shows it: {@code Class.method} with the frame type), {@code SAMPLE<tab>thread<tab>frame<tab>n}.
 * This is the text of what JMC's Threads page and its selection of the pause's time range
 * show.
 * </ul>
 * Exit status 1 with an {@code ERROR} line when JMC cannot load the file.
 *
 * <p>Usage: {@code java -cp $JMC_CP JmcOneRecording.java [--near TYPE] FILE}.
 */
public class JmcOneRecording {
    public static void main(String[] args) {
        String near = args.length == 3 && args[0].equals("--near") ? args[1] : null;
        IItemCollection all;
        try {
            all = JfrLoaderToolkit.loadEvents(new File(args[args.length - 1]));
        } catch (Exception e) {
            System.out.println("ERROR " + e);
            System.exit(1);
            return;
        }
        Map<String, Long> types = new TreeMap<>();
        Map<IMCThread, Map<String, Long>> lanes = new HashMap<>();
        Map<String, long[]> ranges = new TreeMap<>();
        for (IItemIterable items : all) {
            IType<IItem> type = items.getType();
            String id = type.getIdentifier();
            IMemberAccessor<IMCThread, IItem> thread = JfrAttributes.EVENT_THREAD.getAccessor(type);
            IMemberAccessor<IQuantity, IItem> time = JfrAttributes.START_TIME.getAccessor(type);
            for (IItem item : items) {
                types.merge(id, 1L, Long::sum);
                if (thread != null) {
                    IMCThread t = thread.getMember(item);
                    if (t != null) {
                        lanes.computeIfAbsent(t, k -> new TreeMap<>()).merge(id, 1L, Long::sum);
                    }
                }
                if (time != null) {
                    IQuantity q = time.getMember(item);
                    if (q != null) {
                        long ns = q.clampedLongValueIn(UnitLookup.EPOCH_NS);
                        long[] r = ranges.computeIfAbsent(id, k -> new long[] {ns, ns});
                        r[0] = Math.min(r[0], ns);
                        r[1] = Math.max(r[1], ns);
                    }
                }
            }
        }
        for (Map.Entry<String, Long> e : types.entrySet()) {
            System.out.println("TYPE\t" + e.getKey() + "\t" + e.getValue());
        }
        for (Map.Entry<IMCThread, Map<String, Long>> e : lanes.entrySet()) {
            StringBuilder counts = new StringBuilder();
            for (Map.Entry<String, Long> c : e.getValue().entrySet()) {
                if (counts.length() > 0) {
                    counts.append(',');
                }
                counts.append(c.getKey()).append('=').append(c.getValue());
            }
            IMCThread t = e.getKey();
            System.out.println("LANE\t" + t.getThreadName() + "\t" + t.getThreadId() + "\t" + counts);
        }
        for (Map.Entry<String, long[]> e : ranges.entrySet()) {
            System.out.println("RANGE\t" + e.getKey() + "\t" + e.getValue()[0] + "\t" + e.getValue()[1]);
        }
        if (near != null) {
            printNear(all, near);
        }
        if (all instanceof IParserStats stats) {
            System.out.println("CHUNKS " + stats.getChunkCount());
            System.out.println("SKIPPED " + stats.getSkippedEventCount());
        }
    }

    /** The CPU-time samples within each event of type {@code near}, by thread and leaf. */
    private static void printNear(IItemCollection all, String near) {
        java.util.List<long[]> windows = new java.util.ArrayList<>();
        java.util.List<String> names = new java.util.ArrayList<>();
        for (IItemIterable items : all) {
            IType<IItem> type = items.getType();
            if (!type.getIdentifier().equals(near)) {
                continue;
            }
            IMemberAccessor<IQuantity, IItem> start = JfrAttributes.START_TIME.getAccessor(type);
            IMemberAccessor<IQuantity, IItem> end = JfrAttributes.END_TIME.getAccessor(type);
            IMemberAccessor<String, IItem> name =
                    org.openjdk.jmc.common.item.Attribute.attr("name", "name", UnitLookup.PLAIN_TEXT)
                            .getAccessor(type);
            for (IItem item : items) {
                long s = start.getMember(item).clampedLongValueIn(UnitLookup.EPOCH_NS);
                long e = end == null ? s : end.getMember(item).clampedLongValueIn(UnitLookup.EPOCH_NS);
                windows.add(new long[] {s, e});
                names.add(name == null || name.getMember(item) == null ? "" : name.getMember(item));
            }
        }
        for (int w = 0; w < windows.size(); w++) {
            long s = windows.get(w)[0], e = windows.get(w)[1];
            Map<String, Long> samples = new TreeMap<>();
            for (IItemIterable items : all) {
                IType<IItem> type = items.getType();
                if (!type.getIdentifier().equals("jdk.CPUTimeSample")) {
                    continue;
                }
                IMemberAccessor<IQuantity, IItem> time = JfrAttributes.START_TIME.getAccessor(type);
                IMemberAccessor<IMCThread, IItem> thread = JfrAttributes.EVENT_THREAD.getAccessor(type);
                IMemberAccessor<org.openjdk.jmc.common.IMCStackTrace, IItem> stack =
                        JfrAttributes.EVENT_STACKTRACE.getAccessor(type);
                for (IItem item : items) {
                    long t = time.getMember(item).clampedLongValueIn(UnitLookup.EPOCH_NS);
                    if (t < s || t > e) {
                        continue;
                    }
                    String leaf = "(no stack)";
                    org.openjdk.jmc.common.IMCStackTrace st = stack == null ? null : stack.getMember(item);
                    if (st != null && !st.getFrames().isEmpty()) {
                        org.openjdk.jmc.common.IMCFrame f = st.getFrames().get(0);
                        leaf = f.getMethod().getType().getFullName() + "." + f.getMethod().getMethodName()
                                + " [" + f.getType() + "]";
                    }
                    IMCThread th = thread.getMember(item);
                    samples.merge((th == null ? "?" : th.getThreadName()) + "\t" + leaf, 1L, Long::sum);
                }
            }
            System.out.println("NEAR\t" + s + "\t" + (e - s) + "\t" + names.get(w));
            for (Map.Entry<String, Long> x : samples.entrySet()) {
                System.out.println("SAMPLE\t" + x.getKey() + "\t" + x.getValue());
            }
        }
    }
}
