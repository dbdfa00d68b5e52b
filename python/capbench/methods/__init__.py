"""Measurement methods: functions of a Measurer factory that return TrialResults."""
