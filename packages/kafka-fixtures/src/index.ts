export {
  DEFAULT_KAFKA_IMAGE,
  KafkaUnavailableError,
  findLocalBrokerScript,
  parseBrokerList,
  resolveKafka,
} from './kafka-broker.js';
export type { KafkaBroker, KafkaSource, ResolveKafkaOptions } from './kafka-broker.js';
export { createTestTopic, uniqueTopicName } from './topics.js';
export { groupLag, groupMembers } from './group-members.js';
export type { CleanupRegistrar, TestTopicOptions } from './topics.js';
export type { ProvidedKafka } from './vitest-global-setup.js';
export { describeLogPortContract } from './log-contract.js';
export type { LogContractSubject } from './log-contract.js';
export { startDedicatedBroker } from './dedicated-broker.js';
export type { DedicatedBroker, DedicatedBrokerOptions } from './dedicated-broker.js';
export { ephemeralPortRange, reservePorts } from './ports.js';
export type { PortRange, ReservePortsOptions } from './ports.js';
export { startDedicatedCluster } from './dedicated-cluster.js';
export type {
  ClusterNode,
  DedicatedCluster,
  DedicatedClusterOptions,
} from './dedicated-cluster.js';
