"""Operations on a stored session: inspect, recover, revive, sweep, copy, verify."""
