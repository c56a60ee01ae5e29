"""The Faust application: built from :class:`streams.config.Settings`, nothing else.

``create_app(settings)`` returns a ``faust.App`` whose broker, credentials, store, data
directory, web server and consumer-group timeouts all come from the settings. Faust's own
environment variables (``BROKER_URL``, ``WEB_PORT``, ...) are switched off (``env={}``) so the
``DRAINWATCH_*`` settings are the single source of configuration.

Rules every agent added to this app follows (docs/architecture.md, "Streaming rules"):

* **concurrency=1** (:data:`AGENT_CONCURRENCY`): with more, Faust can commit an offset past a
  message that is still being processed (faust-streaming issue #606), losing it on a crash.
* **at-least-once** processing with idempotent sinks: ``exactly_once`` has open duplicate and
  fencing bugs and needs three brokers.
* Messages carry **batches** (one scheduler iteration per ``node-status`` message, not one node),
  because per-message overhead caps a local broker at ~1,800 messages/s on two cores.

Topics, their keys, record types and JSON Schemas: :mod:`streams.topics`.

The live flow's agents are attached by :func:`streams.live.attach`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import faust

from streams.config import Settings
from streams.kafka import LIMIT_BYTES
from streams.topics import topic_names

APP_ID = "drainwatch"
AGENT_CONCURRENCY = 1  # see module docstring: faust-streaming #606


@dataclass(frozen=True, slots=True)
class AppTopics:
    """The app's ``faust.Topic`` objects; values are raw bytes (orjson batches)."""

    node_status: faust.TopicT
    job_events: faust.TopicT
    node_samples: faust.TopicT
    metrics_drain: faust.TopicT
    metrics_jobs: faust.TopicT
    metrics_shortjobs: faust.TopicT
    metrics_capability: faust.TopicT
    metrics_dfs: faust.TopicT
    alerts: faust.TopicT
    dead_letter: faust.TopicT
    drain_partials: faust.TopicT
    jobs_partials: faust.TopicT
    samples_partials: faust.TopicT
    worker_state: faust.TopicT


PARTITION_FETCH_BYTES = 4 << 20
# A record batch the producer builds (Faust's default is 16 kB): the job path sends a flush's
# thousands of metric messages as batches (streams.live.context.send_many), one request per batch
# and partition in flight, so small batches make a flush wait on round trips (figures in the
# README's benchmark table). Below the broker's 1 MB message.max.bytes, which bounds a batch.
PRODUCER_BATCH_BYTES = 512 << 10
# The broker holds a fetch that finds no new data for this long (aiokafka's fetch_max_wait_ms).
# Faust fixes it at 1500 ms, and aiokafka keeps one fetch in flight per broker: once a busy
# partition's records were taken, the next fetch (for the idle partitions) waited up to 1.5 s
# on the broker before the busy one could be fetched again. The combiners then stalled
# although their backlog was on the broker. 100 ms costs an idle worker ten empty fetches a
# second.
FETCH_MAX_WAIT_MS = 100


def table_manager() -> type:
    """Faust's table manager, without its start-up's fixed one-second sleep (it waits for
    tables to be declared) when none is: drainwatch keeps its state in ``worker-state``, not in
    Faust tables, and the sleep would be a second of every worker's start before its
    first record. With a table declared, Faust's own start runs."""
    from faust.tables import TableManager

    class Tables(TableManager):
        async def on_start(self) -> None:
            if len(self):
                await super().on_start()
            elif not self.should_stop:
                await self._update_channels()
                await self.recovery.start()

    return Tables


def kafka_transport(app: faust.App) -> Any:
    """Faust's aiokafka transport, its worker consumer with :data:`FETCH_MAX_WAIT_MS`."""
    from faust.transport.drivers import aiokafka as drv

    class ConsumerThread(drv.AIOKafkaConsumerThread):
        def _create_worker_consumer(self, transport: Any) -> Any:
            consumer = super()._create_worker_consumer(transport)
            consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS  # read by its fetcher at start()
            return consumer

    class WorkerConsumer(drv.Consumer):
        def _new_consumer_thread(self) -> Any:
            return ConsumerThread(self, loop=self.loop, beacon=self.beacon)

    class Transport(drv.Transport):
        Consumer = WorkerConsumer

    return Transport(app.conf.broker_consumer, app)


def app_settings(settings: Settings, *, app_id: str = APP_ID) -> dict[str, Any]:
    """Keyword arguments for ``faust.App`` derived from the settings (for inspection/tests)."""
    kw: dict[str, Any] = dict(settings.faust_kwargs())
    kw.update(
        store=settings.worker.store,
        datadir=str(settings.general.state_dir / "worker" / app_id),
        web_bind=settings.worker.web_bind,
        web_port=settings.worker.web_port,
        web_host=settings.worker.web_bind,
        topic_partitions=settings.kafka.topic_partitions,
        topic_replication_factor=settings.kafka.topic_replication_factor,
        broker_session_timeout=settings.worker.broker_session_timeout,
        broker_heartbeat_interval=settings.worker.broker_heartbeat_interval,
        broker_rebalance_timeout=settings.worker.broker_rebalance_timeout,
        processing_guarantee="at_least_once",
        consumer_auto_offset_reset="earliest",
        # per partition and fetch (aiokafka's fetch_max_bytes, 50 MB, bounds a whole fetch): a
        # combiner catching up on a backlog of partials must not wait for a fetch every few
        # messages
        consumer_max_fetch_size=PARTITION_FETCH_BYTES,
        producer_max_batch_size=PRODUCER_BATCH_BYTES,
        # every message is at most kafka.message_max_bytes (<= MAX_MESSAGE_BYTES): with the
        # request's own overhead it stays below this and below the topics' max.message.bytes
        producer_max_request_size=LIMIT_BYTES,
        # held acks must not make shutdown and rebalances wait forever (docs/state.md)
        stream_wait_empty=False,
        TableManager=table_manager(),
        autodiscover=False,
        env={},  # Faust's own env vars must not override DRAINWATCH_* settings
    )
    return kw


def create_app(settings: Settings, *, app_id: str = APP_ID) -> faust.App:
    """The drainwatch Faust app. ``app_id`` is also the consumer group (tests pass their own).

    ``app.drainwatch_topics`` holds the :class:`AppTopics`; ``GET /health/`` on the worker's
    web port answers ``{"status": "ok", ...}`` while the worker runs (used by healthchecks).
    """
    app = faust.App(app_id, **app_settings(settings, app_id=app_id))
    app.transport = kafka_transport(app)
    names = topic_names(settings.kafka.topic_prefix)
    app.drainwatch_topics = AppTopics(  # type: ignore[attr-defined]
        **{
            f.name: app.topic(
                getattr(names, f.name),
                value_type=bytes,
                value_serializer="raw",
                key_type=bytes,
                key_serializer="raw",
            )
            for f in fields(names)
        }
    )

    @app.page("/health/")
    async def health(web: Any, request: Any) -> Any:
        return web.json({"status": "ok", "app": app.conf.id, "rebalancing": app.rebalancing})

    return app
