"""Collection: provider runs (fetch, parse, normalize, store), the schedule and its leases."""
