"""capbench tune: the knobs a capture stack has and the search for the settings that lose least (issue 30)."""
