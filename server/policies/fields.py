"""Names and values of Pulsar's Policies fields whose enforcement modules import much of the
broker: kept here, so the policy catalog and `pulsard admin` read them without that."""

BACKLOG_QUOTA_MAP = "backlog_quota_map"
SIZE_QUOTA, TIME_QUOTA = "destination_storage", "message_age"
HOLD, EXCEPTION, EVICTION = "producer_request_hold", "producer_exception", "consumer_backlog_eviction"
BACKLOG_QUOTA_POLICIES = (HOLD, EXCEPTION, EVICTION)

#: Pulsar's Policies.compaction_threshold
COMPACTION_THRESHOLD = "compaction_threshold"

#: Pulsar's Policies.inactive_topic_policies, and its delete modes
INACTIVE_TOPIC_POLICIES = "inactive_topic_policies"
DELETE_WHEN_NO_SUBSCRIPTIONS = "delete_when_no_subscriptions"
DELETE_WHEN_SUBSCRIPTIONS_CAUGHT_UP = "delete_when_subscriptions_caught_up"
DELETE_MODES = (DELETE_WHEN_NO_SUBSCRIPTIONS, DELETE_WHEN_SUBSCRIPTIONS_CAUGHT_UP)

MESSAGE_TTL = "message_ttl_in_seconds"
