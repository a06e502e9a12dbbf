export { KAFKA_LOG_DEFAULTS, KafkaLog } from './kafka-log.js';
export type { KafkaLogOptions } from './kafka-log.js';
export {
  TOPIC_LAYOUT_DEFAULTS,
  checkTopics,
  createTopicsProbe,
  planTopics,
  provisionTopics,
} from './topics.js';
export type {
  AdminConnection,
  ProvisionReport,
  TopicLayoutOptions,
  TopicPlan,
  TopicsProbe,
} from './topics.js';
export { toTidemarkError } from './errors.js';
