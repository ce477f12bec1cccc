"""Market data: which offers (the filter scope), current offers and how they are served,
freshness, history, regions and metrics."""
