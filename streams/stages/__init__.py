"""The stages: one module per analytic (the job stages, built by :mod:`streams.stages.jobs`),
the drain stages and the sample stages; their tables are declared in :mod:`streams.tables`."""
