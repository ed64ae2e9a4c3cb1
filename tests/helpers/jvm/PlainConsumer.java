// The real Java KafkaConsumer (kafka-clients 3.9) as KIP-125's plain Kafka consumer, for the interop tests.
//
//   java -cp <kafka 3.9.1 jars>:<dir> PlainConsumer BOOTSTRAP GROUP TOPIC CLIENT_ID LOG [k=v ...]
//
// It keeps the client's default assignors (range, cooperative-sticky) unless told otherwise, so the group
// protocol is negotiated with the bridges' embedded members. Every record is appended to LOG as one JSONL
// line in the format of migrator.observe.records.Processed (thread "<clientId>-0"). Offsets are committed
// synchronously after each batch, and again when partitions are revoked or at the stop if a rebalance got
// in between, so a clean handover leaves exactly the logged records committed. SIGTERM wakes the poll,
// commits, and closes (leaving the group at once).
import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class PlainConsumer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], group = args[1], topic = args[2], clientId = args[3];
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("client.id", clientId);
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        for (int i = 5; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        String member = clientId + "@" + ProcessHandle.current().pid();
        String threadId = clientId + "-0";
        ProcessedLog log = new ProcessedLog(args[4], member);
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
        CountDownLatch done = new CountDownLatch(1);
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.wakeup();
            try {
                done.await();
                main.join(30_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        Map<TopicPartition, OffsetAndMetadata> pending = new HashMap<>();
        consumer.subscribe(Collections.singletonList(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                commit(consumer, pending);
                System.out.println("revoked " + partitions);
                System.out.flush();
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                System.out.println("assigned " + partitions);
                System.out.flush();
            }
        });
        System.out.println("ready " + clientId);
        System.out.flush();
        try {
            while (true) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    long start = ProcessedLog.nowNs();
                    log.write(threadId, r.topic(), r.partition(), r.offset(), start, ProcessedLog.nowNs());
                    pending.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                commit(consumer, pending);
            }
        } catch (WakeupException e) {
            commit(consumer, pending); // SIGTERM
        } finally {
            consumer.close(Duration.ofSeconds(20));
            log.close();
            System.out.println("stopped " + clientId);
            System.out.flush();
            done.countDown();
        }
    }

    /** Commit what was logged; a rebalance in between leaves it pending for the revocation callback. */
    static void commit(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, OffsetAndMetadata> pending) {
        if (pending.isEmpty()) {
            return;
        }
        try {
            consumer.commitSync(pending);
            pending.clear();
        } catch (RebalanceInProgressException e) {
            System.out.println("commit deferred: rebalance in progress");
            System.out.flush();
        }
    }
}
