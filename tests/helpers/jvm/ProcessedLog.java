// One JSONL line per processed record in the format of migrator.observe.records.Processed, flushed at
// once, so the observer judges the JVM peers exactly like our own members. Shared by OldConsumer and
// PlainConsumer (compiled together with each).
import java.io.FileWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.time.Instant;

final class ProcessedLog implements AutoCloseable {
    private final Writer out;
    private final String member;

    ProcessedLog(String path, String member) throws IOException {
        this.out = new FileWriter(path, true);
        this.member = member;
    }

    /** Wall-clock nanoseconds, the clock the observer's other processes and ZooKeeper's ctimes use. */
    static long nowNs() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    private static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    synchronized void write(String threadId, String topic, int partition, long offset, long startNs, long endNs) {
        try {
            out.write("{\"member\":" + quote(member) + ",\"thread_id\":" + quote(threadId) + ",\"topic\":"
                    + quote(topic) + ",\"partition\":" + partition + ",\"offset\":" + offset + ",\"start_ns\":"
                    + startNs + ",\"end_ns\":" + endNs + "}\n");
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public synchronized void close() throws IOException {
        out.close();
    }
}
