"""An evaluation of the guard's detectors on real agent conversations.

`python -m evaluation FILE [FILE...]` replays every conversation of each file through the
package's own `replay` with each detector of the registry alone and all together, and prints
per detector the firings, the conversations they fall in and the tools; for each detector with
thresholds of its own, the firings at thresholds 2 to 5; and every re-run of a call,
sorted by whether something was edited in between and whether its output changed, with the
`stale` firings on each kind (none may fall on a changed output); and, for a file labelled in
`evaluation/labels/`, each detector's precision and recall against the labels at thresholds 2
to 4 under 0.4.0's defaults, the guard as installed and the recommended
configuration. `--show DETECTOR` prints firings in
context, for reading them by hand. Without the corpus files, it says where they come from.
"""
