#!/bin/sh
# One agent's work on one task of login.vine. The task and its resolved
# dependencies (with their decisions) arrive as JSON on stdin; every line
# printed as "> ..." is recorded as a decision of the task; a non-zero exit
# blocks the task. LOGIN_SKIP=PART makes the implementer of PART do nothing.
task=$(cat)
case "$TRELLIS_VINE_TASK" in
implement-*)
	part=${TRELLIS_VINE_TASK#implement-}
	if [ "$part" = "$LOGIN_SKIP" ]; then
		echo "> left the $part for later"
		exit 0
	fi
	echo "> implemented the $part"
	;;
review-*)
	part=${TRELLIS_VINE_TASK#review-}
	if ! printf '%s' "$task" | grep -q "implemented the $part"; then
		echo "nothing was implemented for the $part" >&2
		exit 1
	fi
	echo "> approved the $part"
	;;
*)
	echo "> shipped"
	;;
esac
