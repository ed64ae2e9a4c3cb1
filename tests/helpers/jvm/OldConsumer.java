// The real Scala ZookeeperConsumerConnector (Kafka 1.1.1) as a group member, for the interop tests.
//
//   java -cp <kafka_2.12-1.1.1 jars>:<dir> OldConsumer ZOOKEEPER GROUP TOPIC CONSUMER_ID LOG [k=v ...]
//
// Every record is appended to LOG as one JSONL line in the format of migrator.observe.records.Processed,
// so the same observer judges it and our own members. One stream only: the old connector pairs its
// thread ids with the streams it returns through a hash set, so with several streams a stream cannot tell
// which owner thread ("<group>_<consumerId>-N") it is; with one it is "-0". SIGTERM stops the stream
// first, then shuts the connector down, which commits exactly the offsets of the records logged and
// deregisters.
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import kafka.consumer.Consumer;
import kafka.consumer.ConsumerConfig;
import kafka.consumer.ConsumerIterator;
import kafka.consumer.ConsumerTimeoutException;
import kafka.consumer.KafkaStream;
import kafka.javaapi.consumer.ConsumerConnector;
import kafka.message.MessageAndMetadata;

public final class OldConsumer {
    private static volatile boolean stopping = false;

    public static void main(String[] args) throws Exception {
        String zookeeper = args[0], group = args[1], topic = args[2], consumerId = args[3];
        Properties props = new Properties();
        props.put("zookeeper.connect", zookeeper);
        props.put("group.id", group);
        props.put("consumer.id", consumerId);
        props.put("auto.offset.reset", "smallest");
        props.put("auto.commit.interval.ms", "1000");
        props.put("rebalance.backoff.ms", "400");
        props.put("zookeeper.session.timeout.ms", "4000");
        props.put("consumer.timeout.ms", "100"); // so that a stream thread sees the stop flag
        for (int i = 5; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        String member = consumerId + "@" + ProcessHandle.current().pid();
        String threadId = group + "_" + consumerId + "-0";
        ProcessedLog log = new ProcessedLog(args[4], member);
        ConsumerConnector connector = Consumer.createJavaConsumerConnector(new ConsumerConfig(props));
        Map<String, List<KafkaStream<byte[], byte[]>>> byTopic =
                connector.createMessageStreams(Collections.singletonMap(topic, 1));
        ConsumerIterator<byte[], byte[]> it = byTopic.get(topic).get(0).iterator();
        Thread stream = new Thread(() -> drain(it, threadId, log), "stream-0");
        stream.start();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping = true;
            try {
                stream.join(30_000);
                connector.shutdown(); // commits the consumed offsets (auto commit) and deregisters
                log.close();
                System.out.println("stopped " + consumerId);
                System.out.flush();
            } catch (Exception e) {
                e.printStackTrace();
            }
            stopped.countDown();
        }));
        System.out.println("ready " + consumerId);
        System.out.flush();
        stopped.await();
    }

    static void drain(ConsumerIterator<byte[], byte[]> it, String threadId, ProcessedLog log) {
        while (!stopping) {
            MessageAndMetadata<byte[], byte[]> m;
            long start;
            try {
                if (!it.hasNext()) {
                    return;
                }
                m = it.next();
                start = ProcessedLog.nowNs();
            } catch (ConsumerTimeoutException e) {
                continue;
            }
            log.write(threadId, m.topic(), m.partition(), m.offset(), start, ProcessedLog.nowNs());
        }
    }
}
