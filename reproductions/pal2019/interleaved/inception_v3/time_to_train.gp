# Time to train vs number of GPUs
#
# Written by `parasim report`. Edit freely, then re-render from this folder with
#   gnuplot time_to_train.gp
# Reads: scaling.csv (next to this script). Writes time_to_train.png and time_to_train.svg.
# scaling.csv: series_index, gpus, time_to_train_s, step_time_ms, global_batch, epochs, speedup (time-to-train
#   speed-up over one GPU), series (name), strategy (the split used at that GPU count)
if (!exists("png_file")) png_file = "time_to_train.png"
if (!exists("svg_file")) svg_file = "time_to_train.svg"

set encoding utf8
set datafile separator comma
set datafile columnheaders

# Okabe & Ito colour-blind-safe palette (Wong, Nature Methods 8:441, 2011)
black = "#000000"; orange = "#E69F00"; sky_blue = "#56B4E9"; bluish_green = "#009E73"
yellow = "#F0E442"; blue = "#0072B2"; vermillion = "#D55E00"; reddish_purple = "#CC79A7"
grey = "#7F7F7F"; light_grey = "#C8C8C8"

set border 3 lw 1 lc rgb "#404040"
set tics nomirror out scale 0.6
set grid back lc rgb "#E4E4E4" lw 1 dt 1
set key outside right top vertical Left reverse samplen 2.5 spacing 1.2 box lc rgb "#C8C8C8"
set title font ",14"

data = "scaling.csv"

# One entry per series; series_index in the CSV selects the entry.
array series_title[5] = ["DP only", "best hybrid", "M = 2 GPUs per worker", "M = 4 GPUs per worker", "M = 8 GPUs per worker"]
array series_colour[5] = [vermillion, blue, orange, bluish_green, reddish_purple]
array series_width[5] = [2.5, 2.5, 1.5, 1.5, 1.5]
array series_dash[5] = [1, 1, 2, 2, 2]
array series_point[5] = [7, 5, 9, 11, 13]

unit_s = 3600.0  # seconds per hours
set title "Time to train inception_v3 vs number of GPUs"
set logscale x 2
set xlabel "GPUs (log scale)"
set xtics (8, 16, 32, 64, 128, 256, 512, 1024)
set xrange [6.153846153846153:1331.2]
set ylabel "time to train (hours, log scale)"
set logscale y 10
set yrange [0.26459553536706354:74.88623086862087]
set ytics (0.5, 1, 2, 5, 10, 20, 50)

set terminal pngcairo size 1000,600 font "sans,11" noenhanced background rgb "white"
set output png_file
plot for [i=1:|series_title|] data using "gpus":(column("series_index") == i - 1 ? column("time_to_train_s") / unit_s : NaN) \
     with linespoints lc rgb series_colour[i] lw series_width[i] dt series_dash[i] \
     pt series_point[i] ps 1.3 title series_title[i]
set terminal svg size 1000,600 dynamic font "sans,11" noenhanced background rgb "white"
set output svg_file
replot
unset output
