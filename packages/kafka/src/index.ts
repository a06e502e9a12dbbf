export { KAFKA_LOG_DEFAULTS, KafkaLog } from './kafka-log.js';
export type { KafkaLogOptions } from './kafka-log.js';
export { TOPIC_LAYOUT_DEFAULTS, planTopics } from './topic-plan.js';
export type { TopicLayoutOptions, TopicPlan } from './topic-plan.js';
export { provisionTopics } from './topics.js';
export type { ProvisionReport } from './topics.js';
export { checkTopics, createTopicsProbe } from './topic-check.js';
export type { TopicsProbe } from './topic-check.js';
export type { AdminConnection } from './admin-connection.js';
