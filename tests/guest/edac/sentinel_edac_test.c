// SPDX-License-Identifier: GPL-2.0
/*
 * sentinel_edac_test - a memory controller for EDAC with no hardware
 * behind it, for Sentinel's tests only: QEMU emulates no controller that
 * EDAC drives, so the guests have none, and host.edac_* would never be
 * checked against a count other than 0.
 *
 * Loading it registers mc0 with EDAC's own core (edac_mc_alloc,
 * edac_mc_add_mc): /sys/devices/system/edac/mc/mc0 appears, on the list
 * Sentinel walks.  Writing N to its parameters makes EDAC's core count
 * errors, as a driver does when its hardware reports them:
 *
 *   echo 3 > /sys/module/sentinel_edac_test/parameters/inject_ce
 *   echo 1 > /sys/module/sentinel_edac_test/parameters/inject_ue
 *
 * Never load it on a real machine: its errors are made up.
 */
#include <linux/edac.h>
#include <linux/module.h>
#include <linux/platform_device.h>

/* drivers/edac/edac_mc.h, which headers packages do not ship: the
 * exported functions this module calls (the same from 5.10 to 6.12) */
struct mem_ctl_info *edac_mc_alloc(unsigned int mc_num, unsigned int n_layers, struct edac_mc_layer *layers,
				   unsigned int sz_pvt);
int edac_mc_add_mc_with_groups(struct mem_ctl_info *mci, const struct attribute_group **groups);
struct mem_ctl_info *edac_mc_del_mc(struct device *dev);
void edac_mc_free(struct mem_ctl_info *mci);
void edac_mc_handle_error(const enum hw_event_mc_err_type type, struct mem_ctl_info *mci, const u16 error_count,
			  const unsigned long page_frame_number, const unsigned long offset_in_page,
			  const unsigned long syndrome, const int top_layer, const int mid_layer, const int low_layer,
			  const char *msg, const char *other_detail);

static struct platform_device *set_pdev;
static struct mem_ctl_info *set_mci;

static int set_inject(enum hw_event_mc_err_type type, const char *val)
{
	unsigned int n;
	int r = kstrtouint(val, 0, &n);

	if (r)
		return r;
	if (!set_mci || n > 0xffff)
		return -EINVAL;
	if (n)
		edac_mc_handle_error(type, set_mci, (u16)n, 0, 0, 0, 0, -1, -1, "sentinel test error", "");
	return 0;
}

static int set_ce(const char *val, const struct kernel_param *kp)
{
	return set_inject(HW_EVENT_ERR_CORRECTED, val);
}

static int set_ue(const char *val, const struct kernel_param *kp)
{
	return set_inject(HW_EVENT_ERR_UNCORRECTED, val);
}

static const struct kernel_param_ops set_ce_ops = {.set = set_ce};
static const struct kernel_param_ops set_ue_ops = {.set = set_ue};
module_param_cb(inject_ce, &set_ce_ops, NULL, 0200);
MODULE_PARM_DESC(inject_ce, "count this many corrected errors on mc0");
module_param_cb(inject_ue, &set_ue_ops, NULL, 0200);
MODULE_PARM_DESC(inject_ue, "count this many uncorrected errors on mc0");

static int __init set_init(void)
{
	struct edac_mc_layer layer = {.type = EDAC_MC_LAYER_CHIP_SELECT, .size = 1, .is_virt_csrow = true};
	int r;

	set_pdev = platform_device_register_simple("sentinel_edac_test", -1, NULL, 0);
	if (IS_ERR(set_pdev))
		return PTR_ERR(set_pdev);
	set_mci = edac_mc_alloc(0, 1, &layer, 0);
	if (!set_mci) {
		r = -ENOMEM;
		goto out_pdev;
	}
	set_mci->pdev = &set_pdev->dev;
	set_mci->mtype_cap = MEM_FLAG_DDR4;
	set_mci->edac_ctl_cap = EDAC_FLAG_SECDED;
	set_mci->edac_cap = EDAC_FLAG_SECDED;
	set_mci->mod_name = "sentinel_edac_test";
	set_mci->ctl_name = "sentinel_edac_test";
	set_mci->dev_name = dev_name(&set_pdev->dev);
	set_mci->dimms[0]->nr_pages = 1;
	set_mci->dimms[0]->grain = 8;
	set_mci->dimms[0]->mtype = MEM_DDR4;
	set_mci->dimms[0]->edac_mode = EDAC_SECDED;
	r = edac_mc_add_mc_with_groups(set_mci, NULL);
	if (r)
		goto out_mci;
	return 0;
out_mci:
	edac_mc_free(set_mci);
	set_mci = NULL;
out_pdev:
	platform_device_unregister(set_pdev);
	return r;
}

static void __exit set_exit(void)
{
	edac_mc_del_mc(&set_pdev->dev);
	edac_mc_free(set_mci);
	platform_device_unregister(set_pdev);
}

module_init(set_init);
module_exit(set_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Sentinel's tests: an EDAC memory controller with no hardware, whose errors are injected");
