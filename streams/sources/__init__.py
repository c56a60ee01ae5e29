"""The replay's readers: log and trace files (any compression) read, checked and batched for
``drainwatch replay``; the shippers (``streams.ship``) read with them too."""
