# Per-step time breakdown per strategy
#
# Written by `parasim report`. Edit freely, then re-render from this folder with
#   gnuplot breakdown.gp
# Reads: breakdown.csv (next to this script). Writes breakdown.png and breakdown.svg.
# breakdown.csv: index, compute_ms, exposed_comm_ms, bubble_ms, idle_ms, strategy
#   (per step, averaged over the strategy's devices; the four parts add up to the step time)
if (!exists("png_file")) png_file = "breakdown.png"
if (!exists("svg_file")) svg_file = "breakdown.svg"

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

data = "breakdown.csv"
unit_ms = 1.0  # ms per ms
set title "Where one training step's time goes"
set ylabel "time per step (ms)"
set xrange [-0.6:15.6]
set yrange [0:149.38336784]
set grid noxtics ytics
set boxwidth 0.7
set style fill solid 1.0 border lc rgb "white"
set xtics ("dp=8" 0, "dp=4,mp=2,\nschedule=interleaved,\nmicro=2,interleave=3" 1, "dp=16" 2, "dp=8,mp=2,\nschedule=interleaved,\nmicro=2,interleave=3" 3, "dp=32" 4, "dp=16,mp=2,\nschedule=interleaved,\nmicro=2,interleave=3" 5, "dp=64" 6, "dp=32,mp=2,\nschedule=interleaved,\nmicro=2,interleave=3" 7, "dp=128" 8, "dp=64,mp=2,\nschedule=interleaved,\nmicro=4,interleave=3" 9, "dp=256" 10, "dp=128,mp=2,\nschedule=interleaved,\nmicro=4,interleave=3" 11, "dp=512" 12, "dp=256,mp=2,\nschedule=interleaved,\nmicro=4,interleave=3" 13, "dp=1024" 14, "dp=256,mp=4,\nschedule=interleaved,\nmicro=4,interleave=3" 15) rotate by 45 right font ",9"
set bmargin 12
set lmargin 14

# Stacks are drawn tallest first so each shorter one covers the bottom of the previous.
compute(c) = column("compute_ms") / unit_ms
exposed(c) = compute(c) + column("exposed_comm_ms") / unit_ms
bubble(c) = exposed(c) + column("bubble_ms") / unit_ms
step(c) = bubble(c) + column("idle_ms") / unit_ms
label(v) = v >= 100 ? sprintf("%.0f", v) : sprintf("%.3g", v)

set terminal pngcairo size 1000,700 font "sans,11" noenhanced background rgb "white"
set output png_file
plot data using "index":(step(0)) with boxes lc rgb light_grey title "idle", \
     data using "index":(bubble(0)) with boxes lc rgb sky_blue title "pipeline bubble", \
     data using "index":(exposed(0)) with boxes lc rgb vermillion title "exposed communication", \
     data using "index":(compute(0)) with boxes lc rgb blue title "compute", \
     data using "index":(step(0)):(label(step(0))) with labels offset 0,0.7 notitle
set terminal svg size 1000,700 dynamic font "sans,11" noenhanced background rgb "white"
set output svg_file
replot
unset output
