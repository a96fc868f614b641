#!/usr/bin/env bash
# not written yet
exit 0
